// The agent's local services and checks as catalog entries (Consul's NodeService and HealthCheck in
// a catalog registration), for anti-entropy. A check's Definition carries what a catalog
// registration keeps of it, so that an entry written directly and one sent through a server compare equal.
import type { CheckInput, ServiceInput } from '../catalog/register.js';
import type { ProxyConfig as CatalogProxy, Upstream as CatalogUpstream } from '../catalog/model.js';
import { formatDuration } from '../core/duration.js';
import type { LocalCheck, LocalService, ProxyConfig, Upstream } from './model.js';

export function serviceEntry(s: LocalService): ServiceInput {
  const tagged = s.taggedAddresses === undefined ? [] : Object.entries(s.taggedAddresses);
  return {
    Kind: s.kind,
    ID: s.id,
    Service: s.service,
    Tags: [...s.tags],
    Address: s.address,
    ...(tagged.length === 0
      ? {}
      : { TaggedAddresses: Object.fromEntries(tagged.map(([k, a]) => [k, { Address: a.address, Port: a.port }])) }),
    Meta: { ...s.meta },
    Port: s.port,
    Weights: { Passing: s.weights.passing, Warning: s.weights.warning },
    EnableTagOverride: s.enableTagOverride,
    Proxy: s.proxy === undefined ? {} : proxyEntry(s.proxy),
    Connect: s.connectNative ? { Native: true } : {},
  };
}

export function checkEntry(c: LocalCheck): CheckInput {
  const s = c.spec;
  const duration = (ms: number): string => (ms > 0 ? formatDuration(ms) : '');
  const definition: Record<string, string> = {};
  const put = (key: string, value: string): void => {
    if (value !== '') definition[key] = value;
  };
  put('HTTP', s.http);
  put('TCP', s.tcp);
  put('GRPC', s.grpc);
  put('TTL', duration(s.ttlMs));
  put('Interval', duration(s.intervalMs));
  put('Timeout', duration(s.timeoutMs));
  put('DeregisterCriticalServiceAfter', duration(s.deregisterCriticalServiceAfterMs));
  return {
    CheckID: c.checkId,
    Name: c.name,
    Status: c.status,
    Notes: c.notes,
    Output: c.output,
    ServiceID: c.serviceId,
    Type: c.type === 'maintenance' ? '' : c.type,
    Interval: duration(s.intervalMs),
    Timeout: duration(s.timeoutMs),
    Definition: definition,
  };
}

/** Only the fields set, as a registration decoded from JSON holds them. */
function proxyEntry(p: ProxyConfig): CatalogProxy {
  const out: { -readonly [K in keyof CatalogProxy]: CatalogProxy[K] } = {};
  if (p.destinationServiceName !== '') out.DestinationServiceName = p.destinationServiceName;
  if (p.destinationServiceId !== '') out.DestinationServiceID = p.destinationServiceId;
  if (p.localServiceAddress !== '') out.LocalServiceAddress = p.localServiceAddress;
  if (p.localServicePort !== 0) out.LocalServicePort = p.localServicePort;
  if (p.mode !== '') out.Mode = p.mode;
  if (p.config !== undefined) out.Config = p.config;
  if (p.upstreams.length > 0) out.Upstreams = p.upstreams.map(upstreamEntry);
  return out;
}

function upstreamEntry(u: Upstream): CatalogUpstream {
  const out: { -readonly [K in keyof CatalogUpstream]: CatalogUpstream[K] } = { DestinationName: u.destinationName };
  if (u.destinationType !== '') out.DestinationType = u.destinationType;
  if (u.destinationNamespace !== '') out.DestinationNamespace = u.destinationNamespace;
  if (u.datacenter !== '') out.Datacenter = u.datacenter;
  if (u.localBindAddress !== '') out.LocalBindAddress = u.localBindAddress;
  if (u.localBindPort !== 0) out.LocalBindPort = u.localBindPort;
  if (u.config !== undefined) out.Config = u.config;
  return out;
}
