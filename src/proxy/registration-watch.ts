// A sidecar proxy's registration followed as Consul's proxy follows it: GET /v1/agent/service/:id
// blocking on its ContentHash, each change read as a proxy configuration and handed on. A failed
// read (the agent gone, the registration removed) is logged once; the proxy keeps what it has.
import { AgentClient, type AgentAddress } from '../sdk/agent-client.js';
import { watchPath, type Unwatch } from '../sdk/blocking-watch.js';
import type { SdkLogger } from '../sdk/index.js';
import { configFromRegistration, type ProxyConfig, type ProxyRegistration } from './config.js';

export function followRegistration(
  agent: AgentAddress,
  proxyId: string,
  onChange: (config: ProxyConfig) => void,
  log: SdkLogger,
): Unwatch {
  const client = new AgentClient(agent);
  let failing = false;
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
      onChange(configFromRegistration(body as ProxyRegistration));
    },
  });
  return () => {
    unwatch();
    client.close();
  };
}
