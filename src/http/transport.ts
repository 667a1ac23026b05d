// Picks and starts the HTTP transport behind the one boundary (server-types.ts). `auto`, the
// default: uWS on a loopback address, where a host's proxies call their agent, and node:http
// (strict framing) on every other address; `uws` and `node` force one. uWS serves only where its
// binary loads on this Node and glibc; node:http serves otherwise, with a warning (docs/decisions.md D18).
import { isIP } from 'node:net';
import { startNodeServer } from './node-server.js';
import type { HttpServer, HttpServerOptions, TransportName } from './server-types.js';
import type { TlsServerCredentials } from './tls-credentials.js';
import { startUwsServer, uwsBuild, type UwsBuild } from './uws-server.js';

export type TransportSetting = 'auto' | TransportName;

export interface TransportChoice {
  readonly name: TransportName;
  /** Why, for the start-up log line. */
  readonly reason: string;
  /** The uWS build that serves, package, version and upstream release; absent on node:http. */
  readonly uws?: string;
  /** Set when uWS was wanted and cannot serve: what the operator can do. */
  readonly warning?: string;
}

/** Loads uWS (through `probe`) only when it could serve the address. */
export function chooseTransport(
  setting: TransportSetting,
  clientAddr: string,
  probe: () => UwsBuild = uwsBuild,
): TransportChoice {
  if (setting === 'node') return { name: 'node', reason: 'configured' };
  if (setting === 'auto' && !isLoopback(clientAddr))
    return { name: 'node', reason: 'address beyond loopback: strict HTTP parsing' };
  const build = probe();
  if (!build.loaded) {
    const asked = setting === 'uws' ? 'http_config.transport is "uws" but ' : '';
    const remedy = build.remedy === undefined ? '' : `; ${build.remedy}`;
    return {
      name: 'node',
      reason: build.reason,
      warning: `${asked}${build.reason}: serving with node:http, which answers fewer requests per second${remedy} (README, "HTTP transports")`,
    };
  }
  const uws = `${build.package} ${build.version} (uWebSockets.js ${build.upstream})`;
  return { name: 'uws', reason: setting === 'uws' ? 'configured' : 'loopback address', uws };
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
