// Picks and starts the HTTP transport behind the one boundary (server-types.ts): node:http by
// default (strict framing, HTTP/1.0); `uws` for operators who need its rate and whose clients all
// speak HTTP/1.1; `auto` uWS on loopback only. uWS is loaded only when chosen (docs/decisions.md D18).
import { isIP } from 'node:net';
import { startNodeServer } from './node-server.js';
import type { HttpServer, HttpServerOptions, TransportName } from './server-types.js';
import type { TlsServerCredentials } from './tls-credentials.js';
import { startUwsServer, uwsNativeAvailable } from './uws-server.js';

export type TransportSetting = 'auto' | TransportName;

export interface TransportChoice {
  readonly name: TransportName;
  /** Why, for the start-up log line. */
  readonly reason: string;
  /** Set when the configured transport could not be used. */
  readonly warning?: string;
}

export function chooseTransport(setting: TransportSetting, clientAddr: string, uwsNative: boolean = uwsNativeAvailable()): TransportChoice {
  if (setting === 'node') return { name: 'node', reason: 'configured' };
  if (!uwsNative) {
    const reason = `no native uWebSockets.js binary for Node ${process.versions.node} (ABI ${process.versions.modules})`;
    if (setting === 'auto') return { name: 'node', reason };
    return { name: 'node', reason, warning: `http_config.transport is "uws" but there is ${reason}: serving with node:http, which answers fewer requests per second (README, "HTTP transports")` };
  }
  if (setting === 'uws') return { name: 'uws', reason: 'configured' };
  return isLoopback(clientAddr) ? { name: 'uws', reason: 'loopback address' } : { name: 'node', reason: 'address beyond loopback: strict HTTP parsing' };
}

export function isLoopback(address: string): boolean {
  if (isIP(address) === 4) return address.startsWith('127.');
  return address === '::1' || address.toLowerCase().startsWith('::ffff:127.');
}

export function startHttpServer(transport: TransportName, options: HttpServerOptions): Promise<HttpServer> {
  return transport === 'node' ? startNodeServer(options) : startUwsServer(options);
}

/** HTTPS is served by node:https: uWS's SSLApp takes neither a minimum TLS version nor a new certificate while it runs. */
export function startHttpsServer(options: HttpServerOptions, credentials: TlsServerCredentials): Promise<HttpServer> {
  return startNodeServer({ ...options, tls: credentials });
}
