// The HTTP side of the client commands: one request to the agent over node:http or node:https
// (with the TLS client of connection.ts), and errors worded as Consul's CLI words them.
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { checkServerIdentity } from 'node:tls';
import { AgentError, agentError } from '../../core/errors.js';
import { HANDSHAKE_TIMEOUT, connectError } from './connect-error.js';
import type { Target } from './connection.js';
import type { AgentTls } from '../../sdk/agent-client.js';

export { targetFrom, type Target } from './connection.js';

/** An error of the load generator's own checks (src/cli/loadtest/). */
/** What stops a load test before it runs: a flag out of range, a target that cannot serve it, results `compare` refuses. */
export class ClientError extends AgentError {
  constructor(code: 'CLI_LOADTEST_FLAG' | 'CLI_LOADTEST_TARGET' | 'CLI_LOADTEST_COMPARE', message: string) {
    super(code, message);
  }
}

export interface Answer {
  readonly status: number;
  /** The body as UTF-8 text; `bytes` is the body as it came (an archive, a raw KV value). */
  readonly text: string;
  readonly bytes: Buffer;
  readonly headers: Headers;
}

/** Consul's client (go-cleanhttp) gives a TLS handshake ten seconds. */
const TLS_HANDSHAKE_MS = 10_000;

/** Query parameters a read adds (-stale). */
export interface ReadOptions {
  readonly stale?: boolean | undefined;
}

export class ApiClient {
  /** The agent's address and token, for what talks to it itself (the proxy's SDK). */
  /** The agent as the SDK reaches it: its address, token and TLS client settings. */
  get agent(): { readonly address: string; readonly token: string | undefined; readonly tls: AgentTls } {
    return { address: this.target.base, token: this.target.token, tls: this.tlsOptions() };
  }

  constructor(
    private readonly target: Target,
    private readonly reads: ReadOptions = {},
  ) {}

  async call(method: string, path: string, body?: string | Buffer): Promise<Answer> {
    const url = requestUrl(this.target, this.reads, method, path);
    const headers: Record<string, string> = {};
    if (this.target.token !== undefined) headers.authorization = `Bearer ${this.target.token}`;
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const options: RequestOptions = { method, headers, agent: false, ...this.tlsOptions() };
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<Answer>((resolve, reject) => {
      let handshook = false;
      const failed = (err: unknown): void => reject(connectError(err, this.target, handshook));
      const req = send(url, options, (res) => void collect(res).then(resolve, failed));
      if (url.protocol === 'https:') {
        req.on('socket', (socket) => {
          // Go's TLSHandshakeTimeout: a plain-HTTP server may wait for a request line forever.
          const timer = setTimeout(
            () => req.destroy(Object.assign(new Error('TLS handshake timeout'), { code: HANDSHAKE_TIMEOUT })),
            TLS_HANDSHAKE_MS,
          );
          socket.once('secureConnect', () => {
            handshook = true;
            clearTimeout(timer);
          });
          socket.once('close', () => clearTimeout(timer));
        });
      }
      req.on('error', failed);
      req.end(body);
    });
  }

  /**
   * A GET whose body is a stream (GET /v1/agent/monitor): `chunk` gets the body's text as it comes.
   * Resolves 'ended' when the agent ends it, 'stopped' once `signal` aborts; an answer other than
   * 2xx is CLI_UNEXPECTED_ANSWER with `what`.
   */
  stream(path: string, what: string, chunk: (text: string) => void, signal: AbortSignal): Promise<'ended' | 'stopped'> {
    const url = requestUrl(this.target, this.reads, 'GET', path);
    const headers: Record<string, string> = {};
    if (this.target.token !== undefined) headers.authorization = `Bearer ${this.target.token}`;
    const options: RequestOptions = { method: 'GET', headers, agent: false, signal, ...this.tlsOptions() };
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolve, reject) => {
      const failed = (err: unknown): void => {
        if (signal.aborted) resolve('stopped');
        else reject(connectError(err, this.target, true));
      };
      const req = send(url, options, (res) => {
        const status = res.statusCode ?? 0;
        if (status < 200 || status > 299) {
          void collect(res).then((answer) => reject(unexpectedAnswer(answer, what)), failed);
          return;
        }
        res.setEncoding('utf8');
        res.on('data', (text: string) => chunk(text));
        res.on('error', failed);
        res.on('end', () => resolve(signal.aborted ? 'stopped' : 'ended'));
        // A body cut off (the agent killed) ends the stream as Consul's reader sees it: ended.
        res.on('aborted', () => resolve(signal.aborted ? 'stopped' : 'ended'));
      });
      req.on('error', failed);
      req.end();
    });
  }

  private tlsOptions(): AgentTls {
    const tls = this.target.tls;
    if (tls === undefined) return {};
    const name = tls.serverName?.replace(/:\d+$/, '');
    return {
      secureContext: tls.context,
      rejectUnauthorized: tls.verify,
      // SNI carries only a DNS name; an IP server name is checked without being sent.
      ...(name !== undefined && isIP(name) === 0 ? { servername: name } : {}),
      ...(name === undefined
        ? {}
        : {
            checkServerIdentity: (_host: string, cert: Parameters<typeof checkServerIdentity>[1]) =>
              checkServerIdentity(name, cert),
          }),
    };
  }

  /** A 2xx answer's body as JSON; anything else is Consul's "Unexpected response code" error. */
  async json<T>(method: string, path: string, body?: string | Buffer, what = 'querying the agent'): Promise<T> {
    return parseAnswer<T>(await this.expectOk(method, path, body, what), what);
  }

  async expectOk(method: string, path: string, body: string | Buffer | undefined, what: string): Promise<Answer> {
    const answer = await this.call(method, path, body);
    if (answer.status < 200 || answer.status > 299) throw unexpectedAnswer(answer, what);
    return answer;
  }
}

/** The URL of a request: the path on the target, with `dc` on every request and `stale` on reads. */
export function requestUrl(target: Target, reads: ReadOptions, method: string, path: string): URL {
  const extra: string[] = [];
  if (target.datacenter !== undefined) extra.push(`dc=${encodeURIComponent(target.datacenter)}`);
  if (method === 'GET' && reads.stale === true) extra.push('stale');
  // Appended as text: the command's own query stays as it wrote it.
  const query = extra.length === 0 ? '' : `${path.includes('?') ? '&' : '?'}${extra.join('&')}`;
  return new URL(`${target.base}${path}${query}`);
}

/** An answer's body as JSON, or CLI_ANSWER_NOT_JSON (the address is not an agent). */
/** The blocking index an answer carries (either brand's header), '0' when none. */
export function answerIndex(answer: Pick<Answer, 'headers'>): string {
  return answer.headers.get('x-consul-index') ?? answer.headers.get('x-svc-index') ?? '0';
}

export function parseAnswer<T>(answer: Answer, what: string): T {
  try {
    return JSON.parse(answer.text) as T;
  } catch (err) {
    throw agentError('CLI_ANSWER_NOT_JSON', { what, status: answer.status, detail: (err as Error).message });
  }
}

function collect(res: IncomingMessage): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('error', reject);
    res.on('end', () => {
      const headers = new Headers();
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2)
        headers.append(res.rawHeaders[i] as string, res.rawHeaders[i + 1] as string);
      const bytes = Buffer.concat(chunks);
      resolve({ status: res.statusCode ?? 0, text: bytes.toString(), bytes, headers });
    });
  });
}

/** Consul's CLI wording for an answer it did not expect: `Error <what>: Unexpected response code: 403 (...)`. */
export function unexpectedAnswer(answer: Answer, what: string): AgentError {
  return agentError('CLI_UNEXPECTED_ANSWER', { what, status: answer.status, body: answer.text.trim() });
}
