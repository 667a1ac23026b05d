// The HTTP side of the client commands: the agent's address and token from flags or the
// environment (SVC_HTTP_ADDR/SVC_HTTP_TOKEN, or Consul's CONSUL_ spellings, so the commands work
// against a Consul agent too), and errors worded as Consul's CLI words them.
import { AgentError } from '../../core/errors.js';

export class ClientError extends AgentError {
  constructor(message: string) {
    super('CLI_USAGE', message);
  }
}

export interface Target {
  /** `http://127.0.0.1:8500`: a bare `host:port` gets `http://`. */
  readonly base: string;
  readonly token: string | undefined;
}

export function targetFrom(flags: { readonly httpAddr?: string | undefined; readonly token?: string | undefined }, env: NodeJS.ProcessEnv): Target {
  const addr = flags.httpAddr ?? env.SVC_HTTP_ADDR ?? env.CONSUL_HTTP_ADDR ?? '127.0.0.1:8500';
  const token = flags.token ?? env.SVC_HTTP_TOKEN ?? env.CONSUL_HTTP_TOKEN;
  const base = /^https?:\/\//.test(addr) ? addr.replace(/\/+$/, '') : `http://${addr}`;
  return { base, token: token === '' ? undefined : token };
}

export interface Answer {
  readonly status: number;
  readonly text: string;
  readonly headers: Headers;
}

export class ApiClient {
  constructor(private readonly target: Target) {}

  async call(method: string, path: string, body?: string | Buffer): Promise<Answer> {
    const headers: Record<string, string> = {};
    if (this.target.token !== undefined) headers.authorization = `Bearer ${this.target.token}`;
    let res: Response;
    try {
      res = await fetch(`${this.target.base}${path}`, { method, headers, ...(body === undefined ? {} : { body }) });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new ClientError(`Error connecting to the agent at ${this.target.base}: ${cause?.code ?? cause?.message ?? String(err)}`);
    }
    return { status: res.status, text: await res.text(), headers: res.headers };
  }

  /** A 2xx answer's body as JSON; anything else is Consul's "Unexpected response code" error. */
  async json<T>(method: string, path: string, body?: string | Buffer, what = 'querying the agent'): Promise<T> {
    const answer = await this.expectOk(method, path, body, what);
    return JSON.parse(answer.text) as T;
  }

  async expectOk(method: string, path: string, body: string | Buffer | undefined, what: string): Promise<Answer> {
    const answer = await this.call(method, path, body);
    if (answer.status < 200 || answer.status > 299) throw unexpectedAnswer(answer, what);
    return answer;
  }
}

/** Consul's CLI wording for an answer it did not expect: `Error <what>: Unexpected response code: 403 (...)`. */
export function unexpectedAnswer(answer: Answer, what: string): ClientError {
  return new ClientError(`Error ${what}: Unexpected response code: ${answer.status} (${answer.text.trim()})`);
}
