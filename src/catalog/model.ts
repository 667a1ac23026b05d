// The catalog's records as stored: nodes, the services each node runs and the checks on them, in
// Consul's field names (agent/structs: Node, NodeService, HealthCheck), and the tables they live in.
// Rows of a node's services and checks share the key prefix `<node>/`, so a node reads as one range.
import { z } from 'zod';

export const CATALOG_NODES = 'catalog-nodes';
export const CATALOG_SERVICES = 'catalog-services';
export const CATALOG_CHECKS = 'catalog-checks';
/**
 * Instances by service name, and mesh instances (proxies, Connect-native) by the service they
 * serve: one row `<name>/<node>/<id>` each, written with the service row, so that a service's
 * instances are one key range, not a scan of every service.
 */
export const CATALOG_BY_SERVICE = 'catalog-by-service';
export const CATALOG_BY_CONNECT = 'catalog-by-connect';
/**
 * One row per answer family (`s/<service>`, `c/<service>` for its mesh instances, `n/<node>`),
 * rewritten by every commit that changes what that family answers: a blocking read watches its
 * row and wakes only on a change to its own answer (docs/decisions.md D6).
 */
export const CATALOG_INDEX = 'catalog-index';

export type CheckStatus = 'passing' | 'warning' | 'critical' | 'maintenance';
export const CHECK_STATUSES: ReadonlySet<string> = new Set(['passing', 'warning', 'critical', 'maintenance']);

/** Consul's agent-liveness check on every node (a Serf member's health there). */
export const SERF_CHECK_ID = 'serfHealth';
export const SERF_CHECK_NAME = 'Serf Health Status';
export const SERF_ALIVE_OUTPUT = 'Agent alive and reachable';

export interface StoredNode {
  readonly ID: string;
  readonly Node: string;
  readonly Address: string;
  readonly Datacenter: string;
  readonly TaggedAddresses: Readonly<Record<string, string>>;
  readonly Meta: Readonly<Record<string, string>>;
}

export interface ServiceAddress {
  readonly Address: string;
  readonly Port: number;
}

export interface Upstream {
  readonly DestinationType?: string | undefined;
  readonly DestinationNamespace?: string | undefined;
  readonly DestinationName: string;
  readonly Datacenter?: string | undefined;
  readonly LocalBindAddress?: string | undefined;
  readonly LocalBindPort?: number | undefined;
  readonly Config?: Readonly<Record<string, unknown>> | undefined;
}

/** ConnectProxyConfig: the fields a sidecar's registration carries; unset ones stay absent. */
export interface ProxyConfig {
  readonly DestinationServiceName?: string | undefined;
  readonly DestinationServiceID?: string | undefined;
  readonly LocalServiceAddress?: string | undefined;
  readonly LocalServicePort?: number | undefined;
  readonly Mode?: string | undefined;
  readonly Config?: Readonly<Record<string, unknown>> | undefined;
  readonly Upstreams?: readonly Upstream[] | undefined;
}

export interface StoredService {
  /** '' for a typical service; `connect-proxy` for a sidecar. */
  readonly Kind: string;
  readonly ID: string;
  readonly Service: string;
  readonly Tags: readonly string[];
  readonly Address: string;
  readonly TaggedAddresses?: Readonly<Record<string, ServiceAddress>> | undefined;
  readonly Meta: Readonly<Record<string, string>>;
  readonly Port: number;
  readonly Weights: { readonly Passing: number; readonly Warning: number };
  readonly EnableTagOverride: boolean;
  readonly Proxy: ProxyConfig;
  readonly Connect: { readonly Native?: boolean | undefined };
}

export interface StoredCheck {
  readonly Node: string;
  readonly CheckID: string;
  readonly Name: string;
  readonly Status: CheckStatus;
  readonly Notes: string;
  readonly Output: string;
  readonly ServiceID: string;
  readonly ServiceName: string;
  readonly ServiceTags: readonly string[];
  readonly Type: string;
  /** Go duration text ('10s'), '' when the check has none. */
  readonly Interval: string;
  readonly Timeout: string;
  readonly ExposedPort: number;
  readonly Definition: Readonly<Record<string, unknown>>;
}

const stringMap = z.record(z.string(), z.string());

export const storedNodeSchema = z.object({
  ID: z.string(),
  Node: z.string().min(1),
  Address: z.string(),
  Datacenter: z.string(),
  TaggedAddresses: stringMap,
  Meta: stringMap,
}) satisfies z.ZodType<StoredNode>;

const proxySchema = z.object({
  DestinationServiceName: z.string().optional(),
  DestinationServiceID: z.string().optional(),
  LocalServiceAddress: z.string().optional(),
  LocalServicePort: z.number().int().optional(),
  Mode: z.string().optional(),
  Config: z.record(z.string(), z.unknown()).optional(),
  Upstreams: z
    .array(
      z.object({
        DestinationType: z.string().optional(),
        DestinationNamespace: z.string().optional(),
        DestinationName: z.string(),
        Datacenter: z.string().optional(),
        LocalBindAddress: z.string().optional(),
        LocalBindPort: z.number().int().optional(),
        Config: z.record(z.string(), z.unknown()).optional(),
      }),
    )
    .optional(),
});

export const storedServiceSchema = z.object({
  Kind: z.string(),
  ID: z.string().min(1),
  Service: z.string().min(1),
  Tags: z.array(z.string()),
  Address: z.string(),
  TaggedAddresses: z.record(z.string(), z.object({ Address: z.string(), Port: z.number().int() })).optional(),
  Meta: stringMap,
  Port: z.number().int(),
  Weights: z.object({ Passing: z.number().int(), Warning: z.number().int() }),
  EnableTagOverride: z.boolean(),
  Proxy: proxySchema,
  Connect: z.object({ Native: z.boolean().optional() }),
}) satisfies z.ZodType<StoredService>;

export const storedCheckSchema = z.object({
  Node: z.string(),
  CheckID: z.string().min(1),
  Name: z.string(),
  Status: z.enum(['passing', 'warning', 'critical', 'maintenance']),
  Notes: z.string(),
  Output: z.string(),
  ServiceID: z.string(),
  ServiceName: z.string(),
  ServiceTags: z.array(z.string()),
  Type: z.string(),
  Interval: z.string(),
  Timeout: z.string(),
  ExposedPort: z.number().int(),
  Definition: z.record(z.string(), z.unknown()),
}) satisfies z.ZodType<StoredCheck>;

/** Every catalog table's row schema, for the agent's table registration. */
export const CATALOG_SCHEMAS = [
  [CATALOG_NODES, storedNodeSchema],
  [CATALOG_SERVICES, storedServiceSchema],
  [CATALOG_CHECKS, storedCheckSchema],
  [CATALOG_INDEX, z.literal(true)],
  [CATALOG_BY_SERVICE, z.literal(true)],
  [CATALOG_BY_CONNECT, z.literal(true)],
] as const;

/** A node's rows are keyed `<node>/<id>`; the node name is escaped so that a `/` in it cannot split it. */
export function nodePrefix(node: string): string {
  return `${encodeURIComponent(node)}/`;
}

export function memberKey(node: string, id: string): string {
  return nodePrefix(node) + id;
}

/** The rows of a name in CATALOG_BY_SERVICE or CATALOG_BY_CONNECT share this prefix. */
export function namePrefix(name: string): string {
  return `${encodeURIComponent(name)}/`;
}

/** The row of one instance under a name. */
export function byNameKey(name: string, node: string, id: string): string {
  return namePrefix(name) + memberKey(node, id);
}

/** The index row of a service's instances, of its mesh-capable instances, of a node. */
export const serviceIndexKey = (service: string): string => `s/${service}`;
export const connectIndexKey = (service: string): string => `c/${service}`;
export const nodeIndexKey = (node: string): string => `n/${node}`;

/** The service a mesh client dials through this instance: a proxy's destination, or a native service itself. */
export function connectName(service: StoredService): string | undefined {
  if (service.Kind === 'connect-proxy') return service.Proxy.DestinationServiceName;
  return service.Connect.Native === true ? service.Service : undefined;
}

/** A map with its keys in byte order, as Go's encoder writes a map. */
export function sortedRecord<V>(record: Readonly<Record<string, V>> | undefined): Record<string, V> {
  const out: Record<string, V> = {};
  if (record === undefined) return out;
  for (const key of Object.keys(record).sort()) out[key] = record[key] as V;
  return out;
}
