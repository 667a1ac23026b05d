// The agent's listeners: plain HTTP on the transport chosen for it (uWS unless told or unable) and
// HTTPS on node:https, each unless its port is -1, and the watch that tells them when the process
// runs out of descriptors.
import type { AgentConfig } from '../config/types.js';
import type { Logger } from '../core/log.js';
import type { PrometheusMetrics } from '../core/prometheus.js';
import { DescriptorWatch } from '../core/descriptor-watch.js';
import { processDescriptors } from '../core/open-files.js';
import { commonHeaders } from '../http/api.js';
import type { BrandHeaders } from '../http/brand.js';
import type { CompiledRoute } from '../http/routes.js';
import type { HttpServer, TransportName } from '../http/server-types.js';
import { readTlsCredentials, type TlsServerCredentials } from '../http/tls-credentials.js';
import { chooseTransport, startHttpServer, startHttpsServer, type TransportChoice } from '../http/transport.js';

export interface Listening {
  readonly http: number | undefined;
  readonly https: number | undefined;
  readonly transport: TransportName;
  readonly transportReason: string;
  /** The uWS build serving plain HTTP: package, version and upstream release; absent on node:http. */
  readonly uws?: string;
}

export interface Listeners {
  readonly listening: Listening;
  /** Takes new certificate files (a reload); undefined without HTTPS. */
  readonly replaceCredentials: ((credentials: TlsServerCredentials) => void) | undefined;
  /** Whether an HTTPS listener runs (a reload then re-reads its files). */
  readonly https: boolean;
  close(): void;
}

export interface ListenerDeps {
  readonly config: AgentConfig;
  readonly routes: readonly CompiledRoute[];
  readonly brand: BrandHeaders;
  readonly log: Logger;
  readonly prometheus: PrometheusMetrics | undefined;
}

export async function startListeners({ config, routes, brand, log, prometheus }: ListenerDeps): Promise<Listeners> {
  // No plain HTTP listener: node:https serves the one there is, and uWS is never loaded.
  const choice: TransportChoice =
    config.ports.http === -1
      ? { name: 'node', reason: 'ports.http is -1: HTTPS only, always node:https' }
      : chooseTransport(config.httpConfig.transport, config.clientAddr);
  if (choice.warning !== undefined) log.warn({ transport: choice.name }, choice.warning);
  const serverOptions = {
    host: config.clientAddr,
    routes,
    commonHeaders: commonHeaders(config, brand),
    log,
    recordRequest: prometheus?.recordRequest,
  };
  const credentials = config.ports.https === -1 ? undefined : await readTlsCredentials(config.tls);
  const servers: HttpServer[] = [];
  try {
    const http =
      config.ports.http === -1
        ? undefined
        : await startHttpServer(choice.name, { ...serverOptions, port: config.ports.http });
    if (http) servers.push(http);
    const https =
      credentials === undefined
        ? undefined
        : await startHttpsServer({ ...serverOptions, port: config.ports.https }, credentials);
    if (https) servers.push(https);
    const descriptorWatch = new DescriptorWatch(processDescriptors, log, (out) =>
      servers.forEach((s) => s.outOfDescriptors(out)),
    ).start();
    const uws = choice.uws === undefined ? {} : { uws: choice.uws };
    return {
      listening: {
        http: http?.port,
        https: https?.port,
        transport: choice.name,
        transportReason: choice.reason,
        ...uws,
      },
      replaceCredentials: https?.replaceCredentials?.bind(https),
      https: https !== undefined,
      close: () => {
        descriptorWatch.stop();
        for (const server of servers) server.close();
      },
    };
  } catch (err) {
    for (const server of servers) server.close();
    throw err;
  }
}
