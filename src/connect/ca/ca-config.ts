// The CA provider's `Config` map (docs/decisions.md#ca-configuration): the map written at bootstrap
// from ca_config, and the parse + validation of a map sent to PUT /v1/connect/ca/configuration.
// Keys match case-insensitively and with or without underscores, unknown keys are ignored and a
// missing key takes its default (Consul decodes the map onto a fresh default config).
import { caConfigProblems, defaultKeyBits } from '../../config/ca-rules.js';
import type { CaConfig } from '../../config/types.js';
import { durationError, parseDuration } from '../../core/duration.js';
import { agentError, type AgentError } from '../../core/errors.js';
import { limitJson } from '../../core/size-limits.js';
import type { CaSettings } from './model.js';

const HOUR_MS = 3_600_000;

/**
 * A Config map sent to the API, as JSON (docs/decisions.md#size-limits; Consul has no limit): it is
 * stored as sent, and its RootCert and PrivateKey PEMs (an RSA-4096 key is about 3.3 KB, a chain
 * of a few certificates as much again) fit many times over.
 */
export const CA_CONFIG_MAX_JSON = 64 * 1024;

export const DEFAULT_SETTINGS: CaSettings = Object.freeze({
  leafCertTtlMs: 72 * HOUR_MS,
  intermediateCertTtlMs: 8760 * HOUR_MS,
  rootCertTtlMs: 87600 * HOUR_MS,
  privateKeyType: 'ec',
  privateKeyBits: 256,
  csrMaxPerSecond: 50,
  csrMaxConcurrent: 0,
});

/** A parsed provider config: the settings plus the supplied key material. */
export interface ProviderConfig {
  readonly settings: CaSettings;
  readonly privateKey: string | undefined;
  readonly rootCert: string | undefined;
  /** The map as GET shows it, keys sorted, without the private key. */
  readonly publicMap: Readonly<Record<string, unknown>>;
}

/** Duration text as an operator writes it: the largest whole unit ("72h", "90m"), else Go form. */
function durationText(ms: number): string {
  for (const [unit, size] of [
    ['h', HOUR_MS],
    ['m', 60_000],
    ['s', 1000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

function publicMapOf(s: CaSettings, rootCert: string | undefined): Record<string, unknown> {
  // The three TTLs always; the rest only when they differ from the defaults (what was "set").
  const map: Record<string, unknown> = {
    IntermediateCertTTL: durationText(s.intermediateCertTtlMs),
    LeafCertTTL: durationText(s.leafCertTtlMs),
    RootCertTTL: durationText(s.rootCertTtlMs),
  };
  if (s.csrMaxConcurrent !== DEFAULT_SETTINGS.csrMaxConcurrent) map.CSRMaxConcurrent = s.csrMaxConcurrent;
  if (s.csrMaxPerSecond !== DEFAULT_SETTINGS.csrMaxPerSecond) map.CSRMaxPerSecond = s.csrMaxPerSecond;
  if (s.privateKeyBits !== defaultKeyBits(s.privateKeyType)) map.PrivateKeyBits = s.privateKeyBits;
  if (s.privateKeyType !== DEFAULT_SETTINGS.privateKeyType) map.PrivateKeyType = s.privateKeyType;
  if (rootCert !== undefined) map.RootCert = rootCert;
  return Object.fromEntries(Object.entries(map).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** The provider config the agent's `connect.ca_config` describes (already validated at load). */
export function bootstrapConfig(c: CaConfig): ProviderConfig {
  const settings: CaSettings = {
    leafCertTtlMs: c.leafCertTtlMs,
    intermediateCertTtlMs: c.intermediateCertTtlMs,
    rootCertTtlMs: c.rootCertTtlMs,
    privateKeyType: c.privateKeyType,
    privateKeyBits: c.privateKeyBits,
    csrMaxPerSecond: c.csrMaxPerSecond,
    csrMaxConcurrent: c.csrMaxConcurrent,
  };
  return { settings, privateKey: c.privateKey, rootCert: c.rootCert, publicMap: publicMapOf(settings, c.rootCert) };
}

type Field =
  | 'LeafCertTTL'
  | 'IntermediateCertTTL'
  | 'RootCertTTL'
  | 'PrivateKeyType'
  | 'PrivateKeyBits'
  | 'CSRMaxPerSecond'
  | 'CSRMaxConcurrent'
  | 'PrivateKey'
  | 'RootCert'
  | 'SkipValidate';
const FIELDS: readonly Field[] = [
  'LeafCertTTL',
  'IntermediateCertTTL',
  'RootCertTTL',
  'PrivateKeyType',
  'PrivateKeyBits',
  'CSRMaxPerSecond',
  'CSRMaxConcurrent',
  'PrivateKey',
  'RootCert',
  'SkipValidate',
];
const FIELD_BY_FOLDED = new Map(FIELDS.map((f) => [f.toLowerCase(), f]));

const parseError = (field: string, detail: string): AgentError => agentError('CA_CONFIG_PARSE', { field, detail });

function durationMs(field: Field, value: unknown): number {
  if (typeof value === 'number' && Number.isInteger(value)) return value / 1e6; // Go: nanoseconds
  if (typeof value === 'string') {
    const ms = parseDuration(value);
    if (ms !== undefined) return ms;
    throw parseError(field, durationError(value));
  }
  throw parseError(field, `expected a duration, got ${JSON.stringify(value)}`);
}

function numberOf(field: Field, value: unknown, integer: boolean): number {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  if (typeof n === 'number' && Number.isFinite(n) && (!integer || Number.isInteger(n))) return n;
  throw parseError(field, `cannot parse ${JSON.stringify(value)} as ${integer ? 'int' : 'float'}`);
}

function stringOf(field: Field, value: unknown): string {
  if (typeof value === 'string') return value;
  throw parseError(field, `expected type 'string', got ${JSON.stringify(value)}`);
}

/**
 * Parses and validates a provider config map from the API. Problems are 400s with Consul's
 * texts behind "error configuring provider: " (docs/decisions.md D3: user mistakes are 4xx).
 */
export function parseProviderConfig(map: Readonly<Record<string, unknown>>): ProviderConfig {
  limitJson('Config', map, CA_CONFIG_MAX_JSON);
  const values = new Map<Field, unknown>();
  for (const [key, value] of Object.entries(map)) {
    const field = FIELD_BY_FOLDED.get(key.toLowerCase().replace(/_/g, ''));
    if (field !== undefined && value !== null) values.set(field, value);
  }
  const get = <T>(field: Field, parse: (f: Field, v: unknown) => T, fallback: T): T =>
    values.has(field) ? parse(field, values.get(field)) : fallback;

  const type = get('PrivateKeyType', stringOf, 'ec');
  const privateKey = get<string | undefined>('PrivateKey', stringOf, undefined);
  const rootCert = get<string | undefined>('RootCert', stringOf, undefined);
  const skipValidate = get(
    'SkipValidate',
    (f, v) => {
      if (typeof v === 'boolean') return v;
      throw parseError(f, `expected type 'bool', got ${JSON.stringify(v)}`);
    },
    false,
  );
  const fail = (detail: string): AgentError => agentError('CA_CONFIG_INVALID', { detail });
  if (type !== 'ec' && type !== 'rsa') throw fail("private key type must be either 'ec' or 'rsa'");
  const settings: CaSettings = {
    leafCertTtlMs: get('LeafCertTTL', durationMs, DEFAULT_SETTINGS.leafCertTtlMs),
    intermediateCertTtlMs: get('IntermediateCertTTL', durationMs, DEFAULT_SETTINGS.intermediateCertTtlMs),
    rootCertTtlMs: get('RootCertTTL', durationMs, DEFAULT_SETTINGS.rootCertTtlMs),
    privateKeyType: type,
    privateKeyBits: get('PrivateKeyBits', (f, v) => numberOf(f, v, true), defaultKeyBits(type)),
    csrMaxPerSecond: get('CSRMaxPerSecond', (f, v) => numberOf(f, v, false), DEFAULT_SETTINGS.csrMaxPerSecond),
    csrMaxConcurrent: get('CSRMaxConcurrent', (f, v) => numberOf(f, v, true), DEFAULT_SETTINGS.csrMaxConcurrent),
  };
  if (settings.csrMaxPerSecond < 0 || settings.csrMaxConcurrent < 0) throw fail('CSR rate limits must not be negative');
  const problems = skipValidate ? [] : caConfigProblems({ ...settings, privateKey, rootCert });
  // The root/private key pairing is checked even with SkipValidate: a cert alone cannot sign.
  const first =
    problems[0] ??
    (rootCert !== undefined && privateKey === undefined
      ? { message: 'must provide a private key when providing a root cert' }
      : undefined);
  if (first !== undefined) throw fail(first.message);
  // GET shows the map as it was sent (as Consul stores it), minus the private key.
  const publicMap = Object.fromEntries(
    Object.entries(map)
      .filter(([key]) => FIELD_BY_FOLDED.get(key.toLowerCase().replace(/_/g, '')) !== 'PrivateKey')
      .sort(([a], [b]) => (a < b ? -1 : 1)),
  );
  return { settings, privateKey, rootCert, publicMap };
}
