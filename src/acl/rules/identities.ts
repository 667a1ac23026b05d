// The synthetic policies of a token's service and node identities (Consul's policy templates),
// as ParsedRules, and which of them apply in a given datacenter.
import type { ParsedRules } from './model.js';

export interface ServiceIdentity {
  readonly ServiceName: string;
  readonly Datacenters?: readonly string[];
}

export interface NodeIdentity {
  readonly NodeName: string;
  readonly Datacenter: string;
}

/** `service "<n>"` and `service "<n>-sidecar-proxy"` write, `service_prefix ""` and `node_prefix ""` read. */
export function serviceIdentityRules(serviceName: string): ParsedRules {
  return {
    node_prefix: [{ name: '', policy: 'read' }],
    service: [
      { name: serviceName, policy: 'write' },
      { name: `${serviceName}-sidecar-proxy`, policy: 'write' },
    ],
    service_prefix: [{ name: '', policy: 'read' }],
  };
}

/** `node "<n>"` write, `service_prefix ""` read. */
export function nodeIdentityRules(nodeName: string): ParsedRules {
  return {
    node: [{ name: nodeName, policy: 'write' }],
    service_prefix: [{ name: '', policy: 'read' }],
  };
}

/** The identities' policies that apply in `datacenter`: a service identity with no Datacenters applies everywhere. */
export function identityRules(
  datacenter: string,
  services: readonly ServiceIdentity[] = [],
  nodes: readonly NodeIdentity[] = [],
): ParsedRules[] {
  const out: ParsedRules[] = [];
  for (const s of services) {
    const dcs = s.Datacenters;
    if (dcs === undefined || dcs.length === 0 || dcs.includes(datacenter))
      out.push(serviceIdentityRules(s.ServiceName));
  }
  for (const n of nodes) if (n.Datacenter === datacenter) out.push(nodeIdentityRules(n.NodeName));
  return out;
}
