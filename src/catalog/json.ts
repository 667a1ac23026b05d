// The catalog's records as Consul's API writes them (agent/structs Node, ServiceNode, NodeService,
// HealthCheck, CheckServiceNode): keys in Go's field order, zero values where Go writes them,
// `omitempty` fields left out when empty. Clients decode these, so the order and zeros are the API.
import type { Row } from '../state/types.js';
import type { ProxyConfig, StoredCheck, StoredNode, StoredService } from './model.js';
import type { CheckedInstance, Instance } from './queries.js';

export function nodeJson(row: Row<StoredNode>): Record<string, unknown> {
  const n = row.value;
  return {
    ID: n.ID,
    Node: n.Node,
    Address: n.Address,
    Datacenter: n.Datacenter,
    TaggedAddresses: n.TaggedAddresses,
    Meta: n.Meta,
    CreateIndex: row.createIndex,
    ModifyIndex: row.modifyIndex,
  };
}

/** ConnectProxyConfig: its set fields, then Mode, MeshGateway and Expose, which Go always writes. */
function proxyJson(p: ProxyConfig): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (p.DestinationServiceName) out.DestinationServiceName = p.DestinationServiceName;
  if (p.DestinationServiceID) out.DestinationServiceID = p.DestinationServiceID;
  if (p.LocalServiceAddress) out.LocalServiceAddress = p.LocalServiceAddress;
  if (p.LocalServicePort) out.LocalServicePort = p.LocalServicePort;
  out.Mode = p.Mode ?? '';
  if (p.Config !== undefined && Object.keys(p.Config).length > 0) out.Config = p.Config;
  if (p.Upstreams !== undefined && p.Upstreams.length > 0) out.Upstreams = p.Upstreams;
  out.MeshGateway = {};
  out.Expose = {};
  return out;
}

function connectJson(s: StoredService): Record<string, unknown> {
  return s.Connect.Native === true ? { Native: true } : {};
}

/** NodeService, as /v1/health/service, /v1/catalog/node and /v1/agent/services show it. */
export function nodeServiceJson(row: Row<StoredService>): Record<string, unknown> {
  const s = row.value;
  const out: Record<string, unknown> = {};
  if (s.Kind !== '') out.Kind = s.Kind;
  out.ID = s.ID;
  out.Service = s.Service;
  out.Tags = s.Tags;
  out.Address = s.Address;
  if (s.TaggedAddresses !== undefined) out.TaggedAddresses = s.TaggedAddresses;
  out.Meta = s.Meta;
  if (s.Port !== 0) out.Port = s.Port;
  out.Weights = s.Weights;
  out.EnableTagOverride = s.EnableTagOverride;
  out.Proxy = proxyJson(s.Proxy);
  out.Connect = connectJson(s);
  out.PeerName = '';
  out.CreateIndex = row.createIndex;
  out.ModifyIndex = row.modifyIndex;
  return out;
}

/** ServiceNode, as /v1/catalog/service and /v1/catalog/connect show it. */
export function serviceNodeJson({ node, service }: Instance): Record<string, unknown> {
  const n = node.value;
  const s = service.value;
  const out: Record<string, unknown> = {
    ID: n.ID,
    Node: n.Node,
    Address: n.Address,
    Datacenter: n.Datacenter,
    TaggedAddresses: n.TaggedAddresses,
    NodeMeta: n.Meta,
    ServiceKind: s.Kind,
    ServiceID: s.ID,
    ServiceName: s.Service,
    ServiceTags: s.Tags,
    ServiceAddress: s.Address,
  };
  if (s.TaggedAddresses !== undefined) out.ServiceTaggedAddresses = s.TaggedAddresses;
  out.ServiceWeights = s.Weights;
  out.ServiceMeta = s.Meta;
  out.ServicePort = s.Port;
  out.ServiceEnableTagOverride = s.EnableTagOverride;
  out.ServiceProxy = proxyJson(s.Proxy);
  out.ServiceConnect = connectJson(s);
  out.CreateIndex = service.createIndex;
  out.ModifyIndex = service.modifyIndex;
  return out;
}

/**
 * HealthCheck: the one rendering of a check, for the catalog's rows and the agent's own checks
 * (src/http/handlers/local-json.ts hands these fields with indexes 0, as Consul's agent does).
 */
export function healthCheckJson(c: StoredCheck, createIndex: number, modifyIndex: number): Record<string, unknown> {
  return {
    Node: c.Node,
    CheckID: c.CheckID,
    Name: c.Name,
    Status: c.Status,
    Notes: c.Notes,
    Output: c.Output,
    ServiceID: c.ServiceID,
    ServiceName: c.ServiceName,
    ServiceTags: c.ServiceTags,
    Type: c.Type,
    Interval: c.Interval,
    Timeout: c.Timeout,
    ExposedPort: c.ExposedPort,
    Definition: c.Definition,
    CreateIndex: createIndex,
    ModifyIndex: modifyIndex,
  };
}

export function checkJson(row: Row<StoredCheck>): Record<string, unknown> {
  return healthCheckJson(row.value, row.createIndex, row.modifyIndex);
}

/** CheckServiceNode: {Node, Service, Checks}, as /v1/health/service and /v1/health/connect show it. */
export function checkServiceNodeJson(instance: CheckedInstance): Record<string, unknown> {
  return {
    Node: nodeJson(instance.node),
    Service: nodeServiceJson(instance.service),
    Checks: instance.checks.map(checkJson),
  };
}
