// The SDK's side of the agent's HTTP API: one request at a time over keep-alive, with the token
// and the blocking-query index as Consul's clients send them (X-Consul-Token, ?index&wait), the
// index read from either brand of header. Knows nothing of TLS contexts or connections.
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest, type AgentOptions } from 'node:https';

/**
 * How an HTTPS agent is reached: its CA and a client certificate when it verifies clients, or a
 * secure context with them; the name its certificate must hold, or a check of its own; and
 * `rejectUnauthorized: false` to take any certificate (CONSUL_HTTP_SSL_VERIFY=false).
 */
export type AgentTls = Pick<
  AgentOptions,
  'ca' | 'cert' | 'key' | 'secureContext' | 'servername' | 'checkServerIdentity' | 'rejectUnauthorized'
>;

export interface AgentAddress {
  /** `http://127.0.0.1:8500` (the default) or `https://…`. */
  readonly address?: string;
  readonly token?: string;
  /** For an HTTPS agent (`https://` address). */
  readonly tls?: AgentTls;
}

export interface AgentAnswer {
  readonly status: number;
  readonly body: string;
  /** X-Consul-Index or X-Svc-Index; 0 when absent. */
  readonly index: number;
  /** X-Consul-ContentHash or X-Svc-ContentHash (GET /v1/agent/service/:id); '' when absent. */
  readonly hash: string;
}

export const DEFAULT_AGENT_ADDRESS = 'http://127.0.0.1:8500';

export class AgentClient {
  private readonly url: URL;
  private readonly agent: HttpAgent;

  constructor(private readonly options: AgentAddress = {}) {
    this.url = new URL(options.address ?? DEFAULT_AGENT_ADDRESS);
    const tls = options.tls ?? {};
    this.agent =
      this.url.protocol === 'https:' ? new HttpsAgent({ keepAlive: true, ...tls }) : new HttpAgent({ keepAlive: true });
  }

  /** One request; rejects on a network error or when `signal` aborts it. */
  call(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<AgentAnswer> {
    const send = this.url.protocol === 'https:' ? httpsRequest : httpRequest;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = send(
        {
          protocol: this.url.protocol,
          hostname: this.url.hostname,
          port: this.url.port,
          path,
          method,
          agent: this.agent,
          headers: {
            ...(this.options.token === undefined ? {} : { 'X-Consul-Token': this.options.token }),
            ...(payload === undefined ? {} : { 'Content-Type': 'application/json' }),
          },
          ...(signal === undefined ? {} : { signal }),
        },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const index = Number(res.headers['x-consul-index'] ?? res.headers['x-svc-index'] ?? 0);
            const hash = res.headers['x-consul-contenthash'] ?? res.headers['x-svc-contenthash'] ?? '';
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), index, hash: String(hash) });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
