// Local services and checks in Consul's JSON shapes: api.AgentService (field order and omitempty
// as Go writes them), structs.HealthCheck (rendered by src/catalog/json.ts), and api.AgentServiceChecksInfo.
import { createHash } from 'node:crypto';
import { healthCheckJson } from '../../catalog/json.js';
import type { StoredCheck } from '../../catalog/model.js';
import { formatDuration } from '../../core/duration.js';
import type { LocalCheck, LocalService, ProxyConfig, Upstream } from '../../local/model.js';
import { CONNECT_PROXY } from '../../local/model.js';

type Json = Record<string, unknown>;

export function agentServiceJson(s: LocalService, datacenter: string): Json {
  const out: Json = {};
  if (s.kind !== '') out.Kind = s.kind;
  out.ID = s.id;
  out.Service = s.service;
  out.Tags = [...s.tags];
  out.Meta = { ...s.meta };
  out.Port = s.port;
  out.Address = s.address;
  if (s.taggedAddresses !== undefined && Object.keys(s.taggedAddresses).length > 0) {
    out.TaggedAddresses = Object.fromEntries(
      Object.entries(s.taggedAddresses).map(([tag, a]) => [tag, { Address: a.address, Port: a.port }]),
    );
  }
  out.Weights = { Passing: s.weights.passing, Warning: s.weights.warning };
  out.EnableTagOverride = s.enableTagOverride;
  if (s.kind === CONNECT_PROXY || s.kind.endsWith('-gateway')) out.Proxy = proxyJson(s.proxy);
  if (s.connectNative) out.Connect = { Native: true };
  out.Datacenter = datacenter;
  return out;
}

/** The service with its ContentHash (GET /v1/agent/service/:id): a hash of everything else. */
export function withContentHash(service: Json): { json: Json; hash: string } {
  const hash = createHash('sha256').update(JSON.stringify(service)).digest('hex').slice(0, 16);
  const json: Json = {};
  for (const [key, value] of Object.entries(service)) {
    if (key === 'Datacenter') json.ContentHash = hash;
    json[key] = value;
  }
  return { json, hash };
}

function proxyJson(p: ProxyConfig | undefined): Json {
  const out: Json = {};
  if (p !== undefined) {
    if (p.destinationServiceName !== '') out.DestinationServiceName = p.destinationServiceName;
    if (p.destinationServiceId !== '') out.DestinationServiceID = p.destinationServiceId;
    if (p.localServiceAddress !== '') out.LocalServiceAddress = p.localServiceAddress;
    if (p.localServicePort !== 0) out.LocalServicePort = p.localServicePort;
    if (p.mode !== '') out.Mode = p.mode;
    if (p.config !== undefined && Object.keys(p.config).length > 0) out.Config = p.config;
    if (p.upstreams.length > 0) out.Upstreams = p.upstreams.map(upstreamJson);
  }
  // Go writes struct values even under omitempty.
  out.MeshGateway = {};
  out.Expose = {};
  return out;
}

function upstreamJson(u: Upstream): Json {
  const out: Json = {};
  if (u.destinationType !== '') out.DestinationType = u.destinationType;
  if (u.destinationNamespace !== '') out.DestinationNamespace = u.destinationNamespace;
  out.DestinationName = u.destinationName;
  if (u.datacenter !== '') out.Datacenter = u.datacenter;
  if (u.localBindAddress !== '') out.LocalBindAddress = u.localBindAddress;
  if (u.localBindPort !== 0) out.LocalBindPort = u.localBindPort;
  if (u.config !== undefined && Object.keys(u.config).length > 0) out.Config = u.config;
  out.MeshGateway = {};
  return out;
}

/** A local check in the catalog's HealthCheck fields, its Definition as Consul's agent reports it. */
export function catalogCheckOf(c: LocalCheck, node: string): StoredCheck {
  const s = c.spec;
  return {
    Node: node,
    CheckID: c.checkId,
    Name: c.name,
    Status: c.status,
    Notes: c.notes,
    Output: c.output,
    ServiceID: c.serviceId,
    ServiceName: c.serviceName,
    ServiceTags: [...c.serviceTags],
    // Consul's maintenance checks are added without a CheckType, so their Type is empty.
    Type: c.type === 'maintenance' ? '' : c.type,
    Interval: s.intervalMs > 0 ? formatDuration(s.intervalMs) : '',
    Timeout: s.timeoutMs > 0 ? formatDuration(s.timeoutMs) : '',
    ExposedPort: 0,
    Definition: definitionJson(c),
  };
}

/** structs.HealthCheck of a local check: the catalog's renderer, with the indexes Consul's agent leaves at 0. */
export function agentCheckJson(c: LocalCheck, node: string): Json {
  return healthCheckJson(catalogCheckOf(c, node), 0, 0);
}

/** structs.HealthCheckDefinition: every field omitempty, durations as Go prints them. */
function definitionJson(c: LocalCheck): Json {
  const s = c.spec;
  const out: Json = {};
  const put = (key: string, value: unknown, present: boolean): void => {
    if (present) out[key] = value;
  };
  put('HTTP', s.http, s.http !== '');
  put('TLSServerName', s.tlsServerName, s.tlsServerName !== '');
  put('TLSSkipVerify', true, s.tlsSkipVerify);
  put('Header', s.header, Object.keys(s.header).length > 0);
  put('Method', s.method, s.method !== '');
  put('Body', s.body, s.body !== '');
  put('DisableRedirects', true, s.disableRedirects);
  put('TCP', s.tcp, s.tcp !== '');
  put('Interval', formatDuration(s.intervalMs), s.intervalMs > 0);
  put('OutputMaxSize', s.outputMaxSize, s.outputMaxSize > 0);
  put('Timeout', formatDuration(s.timeoutMs), s.timeoutMs > 0);
  put(
    'DeregisterCriticalServiceAfter',
    formatDuration(s.deregisterCriticalServiceAfterMs),
    s.deregisterCriticalServiceAfterMs > 0,
  );
  put('GRPC', s.grpc, s.grpc !== '');
  put('GRPCUseTLS', true, s.grpcUseTls);
  put('AliasNode', s.aliasNode, s.aliasNode !== '');
  put('AliasService', s.aliasService, s.aliasService !== '');
  put('TTL', formatDuration(s.ttlMs), s.ttlMs > 0);
  return out;
}
