// This host's addresses for advertise_addr's templates (addresses.ts): os.networkInterfaces(),
// each marked with whether a default route leaves by its interface (/proc/net/route and
// /proc/net/ipv6_route; where those cannot be read, every interface that is not loopback counts).
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import type { HostAddress } from './addresses.js';

export function hostAddresses(): HostAddress[] {
  const routed = defaultRouteInterfaces();
  const addresses: HostAddress[] = [];
  for (const [name, entries] of Object.entries(networkInterfaces())) {
    for (const entry of entries ?? []) {
      addresses.push({
        interface: name,
        address: entry.address,
        family: entry.family,
        internal: entry.internal,
        defaultRoute: routed === undefined ? !entry.internal : routed.has(name),
      });
    }
  }
  return addresses;
}

/** The interfaces a default route leaves by, or undefined where the routing tables cannot be read. */
function defaultRouteInterfaces(): Set<string> | undefined {
  const names = new Set<string>();
  let read = false;
  try {
    // Iface Destination Gateway ...: a default route's destination and mask are 00000000.
    for (const line of readFileSync('/proc/net/route', 'utf8').split('\n').slice(1)) {
      const [iface, destination, , , , , , mask] = line.trim().split(/\s+/);
      if (iface !== undefined && destination === '00000000' && mask === '00000000') names.add(iface);
    }
    read = true;
  } catch {
    // not Linux, or no IPv4
  }
  try {
    // destination, prefix length, ..., then the interface last: ::/0 is the default route.
    for (const line of readFileSync('/proc/net/ipv6_route', 'utf8').split('\n')) {
      const fields = line.trim().split(/\s+/);
      const iface = fields[fields.length - 1];
      if (fields[0] === '0'.repeat(32) && fields[1] === '00' && iface !== undefined && iface !== 'lo') names.add(iface);
    }
    read = true;
  } catch {
    // no IPv6
  }
  return read ? names : undefined;
}
