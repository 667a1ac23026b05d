import { describe, expect, it } from 'vitest';
import { formatServiceUri, parseSpiffeId, type SpiffeId } from '../../../src/connect/spiffe.js';

const ok = (uri: string): SpiffeId => {
  const parsed = parseSpiffeId(uri);
  if (!parsed.ok) throw new Error(`expected ${uri} to parse: ${parsed.reason}`);
  return parsed.id;
};

describe('parseSpiffeId', () => {
  it.each([
    [
      'spiffe://1234.consul/ns/default/dc/dc1/svc/web',
      {
        kind: 'service',
        host: '1234.consul',
        partition: 'default',
        namespace: 'default',
        datacenter: 'dc1',
        service: 'web',
      },
    ],
    [
      'spiffe://td/ns/team-a/dc/eu-1/svc/api',
      { kind: 'service', host: 'td', partition: 'default', namespace: 'team-a', datacenter: 'eu-1', service: 'api' },
    ],
    [
      'spiffe://td/ap/part1/ns/ns1/dc/dc1/svc/web',
      { kind: 'service', host: 'td', partition: 'part1', namespace: 'ns1', datacenter: 'dc1', service: 'web' },
    ],
    // Segments are unescaped after matching, so an escaped '/' stays inside its segment.
    [
      'spiffe://td/ns/default/dc/dc1/svc/a%2Fb',
      { kind: 'service', host: 'td', partition: 'default', namespace: 'default', datacenter: 'dc1', service: 'a/b' },
    ],
    [
      'SPIFFE://td/ns/default/dc/dc1/svc/web',
      { kind: 'service', host: 'td', partition: 'default', namespace: 'default', datacenter: 'dc1', service: 'web' },
    ],
    [
      'spiffe://user@td/ns/default/dc/dc1/svc/web?x=1#f',
      { kind: 'service', host: 'td', partition: 'default', namespace: 'default', datacenter: 'dc1', service: 'web' },
    ],
    [
      'spiffe://td/agent/client/dc/dc1/id/node-1',
      { kind: 'agent', host: 'td', partition: 'default', datacenter: 'dc1', node: 'node-1' },
    ],
    ['spiffe://td/gateway/mesh/dc/dc1', { kind: 'mesh-gateway', host: 'td', partition: 'default', datacenter: 'dc1' }],
    ['spiffe://td/agent/server/dc/dc1', { kind: 'server', host: 'td', datacenter: 'dc1' }],
    ['spiffe://1234.consul', { kind: 'signing', host: '1234.consul', clusterId: '1234', domain: 'consul' }],
  ])('%s', (uri, expected) => {
    expect(ok(uri)).toEqual(expected);
  });

  it.each([
    ['tubes', "SPIFFE ID must have 'spiffe' scheme"],
    ['https://td/ns/default/dc/dc1/svc/web', "SPIFFE ID must have 'spiffe' scheme"],
    [
      'spiffe://td/ns/default/dc/dc1/svc/web/extra',
      'SPIFFE ID is not in the expected format: spiffe://td/ns/default/dc/dc1/svc/web/extra',
    ],
    ['spiffe://td/ns//dc/dc1/svc/web', 'SPIFFE ID is not in the expected format: spiffe://td/ns//dc/dc1/svc/web'],
    ['spiffe://1234.consul/', 'SPIFFE ID is not in the expected format: spiffe://1234.consul/'],
    ['spiffe://localhost', 'SPIFFE ID is not in the expected format: spiffe://localhost'],
    ['spiffe:opaque', 'SPIFFE ID is not in the expected format: spiffe:opaque'],
    ['spiffe://td/ns/default/dc/dc1/svc/%zz', 'invalid URL escape in "/ns/default/dc/dc1/svc/%zz"'],
    ['spiffe://t d/ns/default/dc/dc1/svc/web', 'invalid host "t d"'],
    ['spiffe://td/ns/default/dc/dc1/svc/w\neb', 'net/url: invalid control character in URL'],
  ])('%j is refused', (uri, reason) => {
    expect(parseSpiffeId(uri)).toEqual({ ok: false, reason });
  });
});

describe('formatServiceUri', () => {
  it('renders the default partition without /ap/ and escapes what a path segment cannot hold', () => {
    expect(formatServiceUri({ trustDomain: 'td', namespace: 'default', datacenter: 'dc1', service: 'web' })).toBe(
      'spiffe://td/ns/default/dc/dc1/svc/web',
    );
    expect(
      formatServiceUri({ trustDomain: 'td', partition: 'p', namespace: '', datacenter: 'dc1', service: 'a b/c' }),
    ).toBe('spiffe://td/ap/p/ns/default/dc/dc1/svc/a%20b%2Fc');
  });

  it('round-trips through the parser', () => {
    for (const service of ['web', 'a b', 'ü', 'x/y', 'x%y']) {
      const uri = formatServiceUri({ trustDomain: 'td', namespace: 'ns1', datacenter: 'dc1', service });
      expect(ok(uri)).toMatchObject({ kind: 'service', namespace: 'ns1', service });
    }
  });
});

describe('parseSpiffeId: the plain service path', () => {
  // An upper-case scheme takes the general rules, so each result can be compared with theirs.
  const general = (uri: string) => parseSpiffeId(`SPIFFE${uri.slice('spiffe'.length)}`);

  it('reads every one-character edit of a service URI as the general rules do', () => {
    const uri = 'spiffe://11111111-2222-3333-4444-555555555555.consul/ns/ns-5/dc/dc1/svc/src-5';
    const alphabet = ['/', '%', '%2F', '?', '#', '@', ' ', '\u0000', '\u007f', 'é', ':', '[', 'a', '-', '~'];
    let services = 0;
    for (let i = 'spiffe://'.length; i <= uri.length; i++) {
      for (const c of alphabet) {
        for (const edited of [
          uri.slice(0, i) + c + uri.slice(i),
          uri.slice(0, i) + c + uri.slice(i + 1),
          uri.slice(0, i) + uri.slice(i + 1),
        ]) {
          const parsed = parseSpiffeId(edited);
          const expected = general(edited);
          expect(parsed.ok, edited).toBe(expected.ok);
          if (parsed.ok && expected.ok) {
            expect(parsed.id, edited).toEqual(expected.id);
            if (parsed.id.kind === 'service') services++;
          }
        }
      }
    }
    expect(services).toBeGreaterThan(1000);
  });
});
