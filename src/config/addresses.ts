// The address other hosts reach this agent's node at: `advertise_addr`, else `bind_addr`, else
// the one private IPv4 address of this host when the agent serves every address (bind_addr or
// client_addr 0.0.0.0), else `client_addr`; `advertise_addr_wan` defaults to it. Each may be a
// go-sockaddr template, as in Consul: `{{ GetPrivateIP }}`, `{{ GetPublicIP }}`,
// `{{ GetInterfaceIP "eth0" }}`. Resolved once at load from the host's interfaces (injected).
import { isIP } from 'node:net';

/** One address of one interface, as os.networkInterfaces() lists it, and whether the default route leaves by it. */
export interface HostAddress {
  readonly interface: string;
  readonly address: string;
  readonly family: 'IPv4' | 'IPv6';
  /** Loopback. */
  readonly internal: boolean;
  readonly defaultRoute: boolean;
}

export interface AdvertiseInput {
  readonly clientAddr: string;
  readonly bindAddr: string | undefined;
  readonly advertiseAddr: string | undefined;
  readonly advertiseAddrWan: string | undefined;
}

export type Advertised =
  | { readonly ok: true; readonly lan: string; readonly wan: string }
  | { readonly ok: false; readonly problems: readonly string[] };

const ANY = new Set(['0.0.0.0', '::']);

/** RFC 6890's private-use IPv4 blocks, as go-sockaddr's GetPrivateIP takes them. */
const PRIVATE_V4: readonly (readonly [number, number])[] = [
  [ipv4(10, 0, 0, 0), 8],
  [ipv4(100, 64, 0, 0), 10],
  [ipv4(172, 16, 0, 0), 12],
  [ipv4(192, 0, 0, 0), 24],
  [ipv4(192, 168, 0, 0), 16],
  [ipv4(198, 18, 0, 0), 15],
];

export function resolveAdvertise(input: AdvertiseInput, host: readonly HostAddress[]): Advertised {
  const problems: string[] = [];
  const evaluate = (key: string, value: string): string | undefined => {
    const result = evaluateAddress(value, host);
    if ('problem' in result) problems.push(`${key}: ${result.problem}`);
    return 'address' in result ? result.address : undefined;
  };
  const bind = input.bindAddr === undefined ? undefined : evaluate('bind_addr', input.bindAddr);
  let lan: string | undefined;
  if (input.advertiseAddr !== undefined) {
    lan = evaluate('advertise_addr', input.advertiseAddr);
  } else if (bind !== undefined && !ANY.has(bind)) {
    lan = bind;
  } else if ((bind !== undefined && ANY.has(bind)) || ANY.has(input.clientAddr)) {
    // Consul's words where it cannot pick for a bind of 0.0.0.0.
    const privates = privateIPv4s(host);
    if (privates.length === 0) problems.push('No private IPv4 address found');
    else if (privates.length > 1)
      problems.push(
        `Multiple private IPv4 addresses found (${privates.join(', ')}). Please configure one with 'bind_addr' and/or 'advertise_addr'.`,
      );
    else lan = privates[0];
  } else {
    lan = input.clientAddr;
  }
  const wan = input.advertiseAddrWan === undefined ? lan : evaluate('advertise_addr_wan', input.advertiseAddrWan);
  if (problems.length > 0 || lan === undefined || wan === undefined) return { ok: false, problems };
  return { ok: true, lan, wan };
}

/** A literal IP address, or a go-sockaddr template of one of the functions above. */
export function evaluateAddress(
  value: string,
  host: readonly HostAddress[],
): { address: string } | { problem: string } {
  const text = value.trim();
  if (!text.includes('{{')) {
    return isIP(text) === 0 ? { problem: `${JSON.stringify(value)} is not an IP address` } : { address: text };
  }
  const m = /^\{\{-?\s*(\w+)((?:\s+"[^"]*")*)\s*-?\}\}$/.exec(text);
  if (m === null)
    return {
      problem: `${JSON.stringify(value)}: only one of GetPrivateIP, GetPublicIP or GetInterfaceIP "name" is understood`,
    };
  const [, fn, rawArgs = ''] = m;
  const args = [...rawArgs.matchAll(/"([^"]*)"/g)].map((a) => a[1] ?? '');
  let found: string | undefined;
  switch (fn) {
    case 'GetPrivateIP':
      found = privateIPv4s(host)[0];
      break;
    case 'GetPublicIP':
      found = host.find(
        (a) =>
          a.family === 'IPv4' && !a.internal && a.defaultRoute && !isPrivateV4(a.address) && !isLinkLocalV4(a.address),
      )?.address;
      break;
    case 'GetInterfaceIP': {
      if (args.length !== 1) return { problem: `${JSON.stringify(value)}: GetInterfaceIP takes an interface name` };
      const own = host.filter((a) => a.interface === args[0]);
      if (own.length === 0) return { problem: `${JSON.stringify(value)}: this host has no interface ${args[0]}` };
      found = (own.find((a) => a.family === 'IPv4') ?? own[0])?.address;
      break;
    }
    default:
      return {
        problem: `${JSON.stringify(value)}: unknown function ${fn ?? ''} (GetPrivateIP, GetPublicIP, GetInterfaceIP "name")`,
      };
  }
  return found === undefined
    ? { problem: `${JSON.stringify(value)} found no address on this host` }
    : { address: found };
}

/** The private IPv4 addresses of the interfaces the default route leaves by (go-sockaddr's GetPrivateInterfaces). */
function privateIPv4s(host: readonly HostAddress[]): string[] {
  return [
    ...new Set(
      host
        .filter((a) => a.family === 'IPv4' && !a.internal && a.defaultRoute && isPrivateV4(a.address))
        .map((a) => a.address),
    ),
  ];
}

function isPrivateV4(address: string): boolean {
  const n = parseV4(address);
  return n !== undefined && PRIVATE_V4.some(([net, bits]) => n >>> (32 - bits) === net >>> (32 - bits));
}

function isLinkLocalV4(address: string): boolean {
  return address.startsWith('169.254.');
}

function parseV4(address: string): number | undefined {
  const parts = address.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) return undefined;
  return ipv4(parts[0] as number, parts[1] as number, parts[2] as number, parts[3] as number);
}

function ipv4(a: number, b: number, c: number, d: number): number {
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
}
