// The one boundary every HTTP transport implements (uws-server.ts, node-server.ts): what it is
// given (routes, common headers) and what the agent holds once it listens.
import type { Logger } from '../core/log.js';
import type { RequestRecorder } from '../core/prometheus.js';
import type { Header } from './reply.js';
import type { CompiledRoute } from './routes.js';
import type { TlsServerCredentials } from './tls-credentials.js';

export interface HttpServerOptions {
  readonly host: string;
  readonly port: number;
  readonly routes: readonly CompiledRoute[];
  /** Headers on every response, errors included (default ACL policy, translate addresses). */
  readonly commonHeaders: readonly Header[];
  readonly log: Logger;
  /** Records each answered request (Prometheus); absent when that is off. */
  readonly recordRequest?: RequestRecorder | undefined;
}

export interface HttpServer {
  readonly port: number;
  /** Stops accepting connections. In-flight responses may still be written. */
  close(): void;
  /** Told when the process runs out of file descriptors and when it has enough again (descriptor-watch.ts). */
  outOfDescriptors(out: boolean): void;
  /** HTTPS only: serves new connections with these certificates (reload); existing ones keep theirs. */
  replaceCredentials?(credentials: TlsServerCredentials): void;
}

/** `uws`: uWebSockets.js (fastest); `node`: node:http with llhttp (strict framing, HTTP/1.0). */
export type TransportName = 'uws' | 'node';
