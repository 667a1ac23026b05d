// The agent's own node as the catalog holds it: its ID, its advertised address (tagged for LAN and
// WAN, as a Consul agent's node is) and the node meta Consul's agents set.
import type { NodeFields } from './catalog.js';

export interface SelfInfo {
  readonly nodeId: string;
  readonly advertiseAddr: string;
  /** The WAN address, when it differs (advertise_addr_wan). */
  readonly advertiseAddrWan?: string;
}

export function selfNodeFields(info: SelfInfo): NodeFields {
  const address = info.advertiseAddr;
  const wan = info.advertiseAddrWan ?? address;
  return {
    ID: info.nodeId,
    Address: address,
    TaggedAddresses: { lan: address, lan_ipv4: address, wan, wan_ipv4: wan },
    Meta: { 'consul-network-segment': '' },
  };
}
