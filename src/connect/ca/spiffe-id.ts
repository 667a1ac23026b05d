// The SPIFFE IDs the CA writes into certificates: a root's signing ID (`spiffe://<td>`) and a
// service's ID, rendered and parsed by the mesh's one SPIFFE module (../spiffe.ts) so a leaf's URI
// is exactly what authorize later parses.
import { formatServiceUri, parseSpiffeId } from '../spiffe.js';

export interface ServiceId {
  readonly trustDomain: string;
  readonly namespace: string;
  readonly datacenter: string;
  readonly service: string;
}

/** The trust domain of a cluster: `<cluster-id>.consul`, lower-cased (docs/decisions.md D9). */
export function trustDomainOf(clusterId: string): string {
  return `${clusterId}.consul`.toLowerCase();
}

export function signingUri(trustDomain: string): string {
  return `spiffe://${trustDomain}`;
}

export function serviceUri(id: ServiceId): string {
  return formatServiceUri(id);
}

/** Parses a service SPIFFE ID; undefined for anything else (an agent ID, a malformed URI). */
export function parseServiceUri(uri: string): ServiceId | undefined {
  const parsed = parseSpiffeId(uri);
  if (!parsed.ok || parsed.id.kind !== 'service') return undefined;
  const { host, namespace, datacenter, service } = parsed.id;
  return { trustDomain: host.toLowerCase(), namespace, datacenter, service };
}
