// The keys behind a jwt method's JWKSURL, fetched by the agent that validates logins (a server in a
// cluster: docs/decisions.md#auth-methods) and kept. A token whose key the kept set lacks (a
// rotation) makes one refetch, at most one per cooldown, so a flood of forged tokens cannot turn
// into a flood of fetches; the set is also refetched once it is older than its maximum age.
// Concurrent needs share one fetch. The clock and the fetch are injected (tests count fetches).
import type { JsonWebKey } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Clock } from '../../core/clock.js';

/** Fetches a JWKS document: resolves its parsed JSON or rejects with go-oidc's kind of text. */
export type JwksFetch = (url: string, caCert: string) => Promise<unknown>;

export interface JwksOptions {
  /** A set older than this is refetched before use. */
  readonly maxAgeMs: number;
  /** The least time between two refetches made for an unknown key. */
  readonly cooldownMs: number;
}

/** go-oidc keeps a set until a token needs another key; an hour bounds how long a revoked key verifies. */
export const JWKS_DEFAULTS: JwksOptions = { maxAgeMs: 3_600_000, cooldownMs: 5_000 };

/** A JWKS answer must come within this (a login waits on it). */
const FETCH_TIMEOUT_MS = 10_000;
/** A JWKS is a few keys; a larger answer is refused. */
const MAX_JWKS_BYTES = 1024 * 1024;

export class JwksKeys {
  private keys: readonly JsonWebKey[] | undefined;
  private fetchedAt = 0;
  private inFlight: Promise<readonly JsonWebKey[]> | undefined;
  /** How many fetches were made (for tests and the bench). */
  fetches = 0;

  constructor(
    private readonly url: string,
    private readonly caCert: string,
    private readonly fetch: JwksFetch,
    private readonly clock: Clock,
    private readonly options: JwksOptions = JWKS_DEFAULTS,
  ) {}

  /** The kept set, fetched first when there is none or it is too old. */
  current(): Promise<readonly JsonWebKey[]> {
    if (this.keys !== undefined && this.clock.now() - this.fetchedAt < this.options.maxAgeMs) {
      return Promise.resolve(this.keys);
    }
    return this.load();
  }

  /** A fresh set for a token the kept one did not verify; undefined within the cooldown of the last fetch. */
  refresh(): Promise<readonly JsonWebKey[]> | undefined {
    if (this.inFlight !== undefined) return this.inFlight;
    if (this.keys !== undefined && this.clock.now() - this.fetchedAt < this.options.cooldownMs) return undefined;
    return this.load();
  }

  private load(): Promise<readonly JsonWebKey[]> {
    if (this.inFlight !== undefined) return this.inFlight;
    this.fetches++;
    const started = this.clock.now();
    this.inFlight = this.fetch(this.url, this.caCert)
      .then((body) => {
        const keys = jwksKeys(body);
        this.keys = keys;
        this.fetchedAt = started;
        return keys;
      })
      .finally(() => {
        this.inFlight = undefined;
      });
    return this.inFlight;
  }
}

/** The `keys` of a JWKS document; throws go-oidc's text for anything else. */
function jwksKeys(body: unknown): readonly JsonWebKey[] {
  const keys = (body as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys)) throw new Error('oidc: failed to decode keys: no "keys" array');
  return keys.filter((k): k is JsonWebKey => k !== null && typeof k === 'object' && !Array.isArray(k));
}

/** GET `url` over http or https (trusting `caCert` when given), as go-oidc's remote key set does. */
export const fetchJwks: JwksFetch = (url, caCert) =>
  new Promise((resolve, reject) => {
    const fail = (detail: string): void => reject(new Error(`oidc: get keys failed: ${detail}`));
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      fail(`parse ${JSON.stringify(url)}: invalid URL`);
      return;
    }
    const options = { method: 'GET', timeout: FETCH_TIMEOUT_MS, headers: { accept: 'application/json' } };
    const req =
      target.protocol === 'https:'
        ? httpsRequest(target, { ...options, ...(caCert === '' ? {} : { ca: caCert }) })
        : httpRequest(target, options);
    req.on('timeout', () => req.destroy(new Error('timeout awaiting response')));
    req.on('error', (err) => fail(err.message));
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_JWKS_BYTES) req.destroy(new Error('response too large'));
        else chunks.push(chunk);
      });
      res.on('error', (err) => fail(err.message));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) {
          fail(`${res.statusCode ?? 0} ${res.statusMessage ?? ''} ${text}`.trim());
          return;
        }
        try {
          resolve(JSON.parse(text));
        } catch (err) {
          reject(new Error(`oidc: failed to decode keys: ${(err as Error).message} ${text}`.trim()));
        }
      });
    });
    req.end();
  });
