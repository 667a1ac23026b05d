import { describe, expect, it } from 'vitest';
import { evaluateAddress, resolveAdvertise, type HostAddress } from '../../../src/config/addresses.js';

const addr = (iface: string, address: string, defaultRoute = true): HostAddress => ({
  interface: iface,
  address,
  family: address.includes(':') ? 'IPv6' : 'IPv4',
  internal: iface === 'lo',
  defaultRoute: iface !== 'lo' && defaultRoute,
});
const LO = [addr('lo', '127.0.0.1'), addr('lo', '::1')];
const ONE = [...LO, addr('eth0', '10.1.2.3'), addr('eth0', 'fe80::1')];
const TWO = [...ONE, addr('eth1', '192.168.7.8')];
const PUBLIC = [...LO, addr('eth0', '203.0.113.9'), addr('eth1', '10.0.0.5', false)];

const resolve = (input: Partial<Parameters<typeof resolveAdvertise>[0]>, host: readonly HostAddress[]) =>
  resolveAdvertise(
    { clientAddr: '127.0.0.1', bindAddr: undefined, advertiseAddr: undefined, advertiseAddrWan: undefined, ...input },
    host,
  );

describe('advertise_addr', () => {
  it('advertises client_addr on loopback, as before, and advertise_addr or bind_addr when set', () => {
    expect(resolve({}, TWO)).toEqual({ ok: true, lan: '127.0.0.1', wan: '127.0.0.1' });
    expect(resolve({ advertiseAddr: '192.0.2.10' }, TWO)).toEqual({ ok: true, lan: '192.0.2.10', wan: '192.0.2.10' });
    expect(resolve({ bindAddr: '10.1.2.3' }, TWO)).toEqual({ ok: true, lan: '10.1.2.3', wan: '10.1.2.3' });
    expect(resolve({ advertiseAddr: '192.0.2.10', advertiseAddrWan: '198.51.100.1' }, TWO)).toEqual({
      ok: true,
      lan: '192.0.2.10',
      wan: '198.51.100.1',
    });
  });

  it('serving every address, advertises the one private IPv4 address, and refuses to guess between several', () => {
    expect(resolve({ clientAddr: '0.0.0.0' }, ONE)).toEqual({ ok: true, lan: '10.1.2.3', wan: '10.1.2.3' });
    expect(resolve({ bindAddr: '0.0.0.0' }, ONE)).toEqual({ ok: true, lan: '10.1.2.3', wan: '10.1.2.3' });
    expect(resolve({ clientAddr: '0.0.0.0' }, TWO)).toEqual({
      ok: false,
      problems: [
        "Multiple private IPv4 addresses found (10.1.2.3, 192.168.7.8). Please configure one with 'bind_addr' and/or 'advertise_addr'.",
      ],
    });
    expect(resolve({ clientAddr: '0.0.0.0' }, LO)).toEqual({ ok: false, problems: ['No private IPv4 address found'] });
    expect(resolve({ clientAddr: '0.0.0.0', advertiseAddr: '10.9.9.9' }, TWO)).toMatchObject({
      ok: true,
      lan: '10.9.9.9',
    });
  });

  it("resolves Consul's go-sockaddr templates from the host's interfaces", () => {
    expect(evaluateAddress('{{ GetPrivateIP }}', ONE)).toEqual({ address: '10.1.2.3' });
    expect(evaluateAddress('{{GetInterfaceIP "eth1"}}', TWO)).toEqual({ address: '192.168.7.8' });
    expect(evaluateAddress('{{ GetPublicIP }}', PUBLIC)).toEqual({ address: '203.0.113.9' });
    // Only addresses the default route leaves by are private candidates, as in go-sockaddr.
    expect(evaluateAddress('{{ GetPrivateIP }}', PUBLIC)).toEqual({
      problem: '"{{ GetPrivateIP }}" found no address on this host',
    });
    expect(resolve({ advertiseAddr: '{{ GetInterfaceIP "eth0" }}' }, TWO)).toMatchObject({ lan: '10.1.2.3' });
  });

  it('names the key and what was wrong with a value it cannot use', () => {
    expect(resolve({ advertiseAddr: 'not-an-ip' }, ONE)).toEqual({
      ok: false,
      problems: ['advertise_addr: "not-an-ip" is not an IP address'],
    });
    expect(resolve({ advertiseAddr: '{{ GetInterfaceIP "eth9" }}' }, ONE)).toEqual({
      ok: false,
      problems: ['advertise_addr: "{{ GetInterfaceIP \\"eth9\\" }}": this host has no interface eth9'],
    });
    expect(resolve({ bindAddr: '{{ GetAllInterfaces }}' }, ONE)).toEqual({
      ok: false,
      problems: [
        'bind_addr: "{{ GetAllInterfaces }}": unknown function GetAllInterfaces (GetPrivateIP, GetPublicIP, GetInterfaceIP "name")',
      ],
    });
    expect(resolve({ advertiseAddrWan: '{{ GetPrivateIP | attr "x" }}' }, ONE)).toMatchObject({ ok: false });
  });
});
