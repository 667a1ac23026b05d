// A sidecar proxy's registration followed as Consul's proxy follows it: GET /v1/agent/service/:id
// blocking on its ContentHash, each change read as a proxy configuration and handed on; with it
// the central defaults (proxy-defaults `global`, the service's service-defaults), merged under the
// registration (central-config.ts). A failed read (the agent gone, the registration removed) is
// logged once; the proxy keeps what it has.
import { AgentClient, type AgentAddress } from '../sdk/agent-client.js';
import { watchPath, type Unwatch } from '../sdk/blocking-watch.js';
import type { SdkLogger } from '../sdk/index.js';
import { watchEntry, withCentralConfig, type ProxyDefaultsEntry, type ServiceDefaultsEntry } from './central-config.js';
import { configFromRegistration, type ProxyConfig, type ProxyRegistration } from './config.js';

export function followRegistration(
  agent: AgentAddress,
  proxyId: string,
  onChange: (config: ProxyConfig) => void,
  log: SdkLogger,
): Unwatch {
  const client = new AgentClient(agent);
  let failing = false;
  let registration: ProxyRegistration | undefined;
  // Each piece is undefined until first read; `null` once read and absent.
  let proxyDefaults: ProxyDefaultsEntry | null | undefined;
  let serviceDefaults: ServiceDefaultsEntry | null | undefined;
  let service: string | undefined;
  let unwatchService: Unwatch = () => {};

  const publish = (): void => {
    if (registration === undefined || proxyDefaults === undefined || serviceDefaults === undefined) return;
    const merged = withCentralConfig(registration, {
      proxyDefaults: proxyDefaults ?? undefined,
      serviceDefaults: serviceDefaults ?? undefined,
    });
    onChange(configFromRegistration(merged));
  };
  const entryFailed = (err: Error): void => {
    log.warn({ proxyId, err: err.message }, 'cannot read a central config entry: serving the config held');
  };
  // A failure of one piece keeps the others: the proxy serves with what it read last.
  const followService = (name: string): void => {
    if (name === service) return;
    unwatchService();
    service = name;
    serviceDefaults = undefined;
    unwatchService = watchEntry(
      client,
      `/v1/config/service-defaults/${encodeURIComponent(name)}`,
      (entry) => {
        serviceDefaults = (entry as ServiceDefaultsEntry | undefined) ?? null;
        publish();
      },
      entryFailed,
    );
  };
  const unwatchGlobal = watchEntry(
    client,
    '/v1/config/proxy-defaults/global',
    (entry) => {
      proxyDefaults = (entry as ProxyDefaultsEntry | undefined) ?? null;
      publish();
    },
    entryFailed,
  );
  const unwatch = watchPath(client, `/v1/agent/service/${encodeURIComponent(proxyId)}`, {
    by: 'hash',
    onError: (err) => {
      if (failing) return;
      failing = true;
      log.warn({ proxyId, err: err.message }, 'cannot read the proxy registration: serving the one held');
    },
    take: (body) => {
      if (failing) log.info({ proxyId }, 'the proxy registration is read again');
      failing = false;
      registration = body as ProxyRegistration;
      followService(registration.Proxy.DestinationServiceName);
      publish();
    },
  });
  return () => {
    unwatch();
    unwatchGlobal();
    unwatchService();
    client.close();
  };
}
