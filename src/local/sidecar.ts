// Connect.SidecarService: the nested definition becomes a connect-proxy service of its own with
// Consul's defaults (agent/sidecar_service.go): ID `<id>-sidecar-proxy`, name `<name>-sidecar-proxy`,
// the parent's address, tags and meta when it gives none, a port from the sidecar range, and two
// default checks (the proxy's port listening, and an alias of the parent).
import { agentError } from '../core/errors.js';
import { CONNECT_PROXY, SIDECAR_SUFFIX, type CheckSpec, type LocalService, type ServiceDefinition } from './model.js';
import { emptyCheckSpec } from './check-spec.js';

export interface SidecarPortRange {
  /** Consul's ports.sidecar_min_port / sidecar_max_port (21000, 21255); 0 turns assignment off. */
  readonly min: number;
  readonly max: number;
}

export const DEFAULT_SIDECAR_PORTS: SidecarPortRange = { min: 21000, max: 21255 };

export const sidecarId = (serviceId: string): string => serviceId + SIDECAR_SUFFIX;

/** The sidecar's own definition, defaults filled; its port from `ports` when it names none. */
export function sidecarDefinition(
  parent: LocalService,
  nested: ServiceDefinition,
  ports: SidecarPortRange,
  services: Iterable<LocalService>,
): ServiceDefinition {
  const id = sidecarId(parent.id);
  const proxy = nested.proxy;
  const localAddress = proxy?.localServiceAddress ?? '';
  const localPort = proxy?.localServicePort ?? 0;
  const fillLocal = localAddress === '' || localPort < 1;
  const port = nested.port > 0 ? nested.port : allocatePort(id, ports, services);
  const address = nested.address !== '' ? nested.address : parent.address;
  const def: ServiceDefinition = {
    ...nested,
    id,
    kind: nested.kind !== '' ? nested.kind : CONNECT_PROXY,
    name: nested.name !== '' ? nested.name : parent.service + SIDECAR_SUFFIX,
    address,
    port,
    tags: nested.tags.length > 0 ? nested.tags : [...parent.tags],
    meta: nested.meta !== undefined && Object.keys(nested.meta).length > 0 ? nested.meta : { ...parent.meta },
    proxy: {
      destinationServiceName: proxy?.destinationServiceName || parent.service,
      destinationServiceId: proxy?.destinationServiceId || parent.id,
      localServiceAddress: fillLocal && localAddress === '' ? '127.0.0.1' : localAddress,
      localServicePort: fillLocal && localPort < 1 ? parent.port : localPort,
      mode: proxy?.mode ?? '',
      config: proxy?.config,
      upstreams: proxy?.upstreams ?? [],
    },
    sidecarService: undefined,
  };
  const checkAddress = address !== '' ? address : (def.proxy?.localServiceAddress ?? '');
  return { ...def, checks: nested.checks.length > 0 ? nested.checks : defaultChecks(parent.id, checkAddress, port) };
}

/** Consul's sidecarPortFromServiceIDLocked: the port it already has in range, else the lowest free one. */
function allocatePort(id: string, ports: SidecarPortRange, services: Iterable<LocalService>): number {
  const used = new Set<number>();
  const inRange = (p: number): boolean => p >= ports.min && p <= ports.max;
  if (ports.min > 0 && ports.max >= ports.min) {
    for (const other of services) {
      if (!inRange(other.port)) continue;
      if (other.id === id) return other.port;
      used.add(other.port);
    }
    for (let p = ports.min; p <= ports.max; p++) if (!used.has(p)) return p;
  }
  throw agentError('SERVICE_SIDECAR_PORT', { min: ports.min, max: ports.max });
}

function defaultChecks(parentId: string, address: string, port: number): CheckSpec[] {
  const host = address.includes(':') ? `[${address}]` : address;
  return [
    { ...emptyCheckSpec(), name: 'Connect Sidecar Listening', tcp: `${host}:${port}`, intervalMs: 10_000 },
    { ...emptyCheckSpec(), name: `Connect Sidecar Aliasing ${parentId}`, aliasService: parentId },
  ];
}
