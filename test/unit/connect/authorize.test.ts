// The decision, table-driven: every precedence level winning over the ones below it, wildcard
// namespaces, L7 intentions denying, the defaults, and Consul's reason strings byte for byte.
import { describe, expect, it } from 'vitest';
import {
  checkAuthorizeRequest,
  checkPartition,
  decide,
  DEFAULT_ALLOW,
  DEFAULT_DENY,
} from '../../../src/connect/authorize.js';
import {
  buildIntentionIndex,
  destinationIntentions,
  firstMatch,
  firstSourceMatch,
  sourceIntentions,
  type IndexedIntention,
  type IntentionIndex,
} from '../../../src/connect/intentions/index.js';
import { intentionKey, type StoredIntention } from '../../../src/connect/intentions/model.js';
import { normalizeIntention, storedIntention, type IntentionInput } from '../../../src/connect/intentions/validate.js';
import type { SpiffeService } from '../../../src/connect/spiffe.js';
import { AgentError } from '../../../src/core/errors.js';
import type { Row } from '../../../src/state/types.js';

let nextIndex = 1;
function row(input: IntentionInput, legacyId?: string): Row<StoredIntention> {
  const candidate = normalizeIntention(input, 'default');
  const value = storedIntention(
    candidate,
    legacyId === undefined
      ? undefined
      : { ID: legacyId, CreatedAt: '2024-01-01T00:00:00Z', UpdatedAt: '2024-01-01T00:00:00Z', Hash: 'h' },
  );
  const index = nextIndex++;
  return {
    key: intentionKey(value.DestinationNS, value.DestinationName, value.SourceNS, value.SourceName),
    value,
    createIndex: index,
    modifyIndex: index,
  };
}

const client = (namespace: string, service: string): SpiffeService => ({
  kind: 'service',
  host: 'td',
  partition: 'default',
  namespace,
  datacenter: 'dc1',
  service,
});

function indexOf(...inputs: IntentionInput[]): IntentionIndex {
  return buildIntentionIndex(
    inputs.map((i) => row(i)),
    42,
  );
}

// One intention per precedence level, all touching destination ns1/db and client ns1/web; each
// with a distinct action pattern so the winner is identifiable by its reason.
const LEVELS: readonly (IntentionInput & { level: number })[] = [
  { level: 9, SourceNS: 'ns1', SourceName: 'web', DestinationNS: 'ns1', DestinationName: 'db', Action: 'deny' },
  { level: 8, SourceNS: 'ns1', SourceName: '*', DestinationNS: 'ns1', DestinationName: 'db', Action: 'allow' },
  { level: 7, SourceNS: '*', SourceName: '*', DestinationNS: 'ns1', DestinationName: 'db', Action: 'deny' },
  { level: 6, SourceNS: 'ns1', SourceName: 'web', DestinationNS: 'ns1', DestinationName: '*', Action: 'allow' },
  { level: 5, SourceNS: 'ns1', SourceName: '*', DestinationNS: 'ns1', DestinationName: '*', Action: 'deny' },
  { level: 4, SourceNS: '*', SourceName: '*', DestinationNS: 'ns1', DestinationName: '*', Action: 'allow' },
  { level: 3, SourceNS: 'ns1', SourceName: 'web', DestinationNS: '*', DestinationName: '*', Action: 'deny' },
  { level: 2, SourceNS: 'ns1', SourceName: '*', DestinationNS: '*', DestinationName: '*', Action: 'allow' },
  { level: 1, SourceNS: '*', SourceName: '*', DestinationNS: '*', DestinationName: '*', Action: 'deny' },
];

describe('decide: precedence', () => {
  it.each(LEVELS.map((l) => [l.level, l] as const))(
    'level %i wins once the levels above it are gone',
    (level, winner) => {
      const index = indexOf(...LEVELS.filter((l) => l.level <= level));
      const d = decide(index, 'ns1', 'db', client('ns1', 'web'), false);
      const src = `${winner.SourceNS}/${winner.SourceName}`;
      const dst = `${winner.DestinationNS}/${winner.DestinationName}`;
      expect(d.result).toEqual({
        Authorized: winner.Action === 'allow',
        Reason: `Matched L4 intention: ${src} => ${dst} (Precedence: ${level}, Action: ${winner.Action?.toUpperCase()})`,
      });
    },
  );

  it('a specific allow beats a wildcard deny (Consul denyWildcard)', () => {
    const index = indexOf(
      { SourceName: '*', DestinationName: 'db', Action: 'deny' },
      { SourceName: 'web', DestinationName: 'db', Action: 'allow' },
    );
    expect(decide(index, 'default', 'db', client('default', 'web'), true).result.Authorized).toBe(true);
    expect(decide(index, 'default', 'db', client('default', 'api'), true).result).toEqual({
      Authorized: false,
      Reason: 'Matched L4 intention: default/* => default/db (Precedence: 8, Action: DENY)',
    });
  });
});

describe('decide: namespaces', () => {
  const index = indexOf(
    { SourceNS: 'ns1', SourceName: 'web', DestinationNS: 'ns1', DestinationName: 'db', Action: 'allow' },
    { SourceNS: 'ns2', SourceName: '*', DestinationNS: 'ns2', DestinationName: '*', Action: 'deny' },
    { SourceNS: '*', SourceName: '*', DestinationNS: '*', DestinationName: '*', Action: 'allow' },
  );

  it.each([
    [
      'the same names in another namespace follow that namespace',
      'ns2',
      'db',
      client('ns2', 'web'),
      false,
      'ns2/* => ns2/* (Precedence: 5',
    ],
    [
      'a namespace wildcard source does not cover other namespaces',
      'ns2',
      'db',
      client('ns1', 'web'),
      true,
      '*/* => */* (Precedence: 1',
    ],
    [
      'a client from another namespace does not match an exact source',
      'ns1',
      'db',
      client('ns9', 'web'),
      true,
      '*/* => */* (Precedence: 1',
    ],
    ['the exact pair', 'ns1', 'db', client('ns1', 'web'), true, 'ns1/web => ns1/db (Precedence: 9'],
    [
      'a destination namespace with no intentions sees */* only',
      'ns3',
      'db',
      client('ns1', 'web'),
      true,
      '*/* => */* (Precedence: 1',
    ],
    ['a wildcard target namespace sees */* only', '*', 'db', client('ns2', 'x'), true, '*/* => */* (Precedence: 1'],
  ])('%s', (_name, ns, target, source, authorized, reason) => {
    const d = decide(index, ns, target, source, false);
    expect(d.result.Authorized).toBe(authorized);
    expect(d.result.Reason).toContain(reason);
  });

  it("lists a destination's applicable intentions pre-merged in precedence order", () => {
    expect(destinationIntentions(index, 'ns2', 'anything').list.map((e) => e.row.value.Precedence)).toEqual([5, 1]);
    expect(destinationIntentions(index, 'ns1', 'db').list.map((e) => e.row.value.Precedence)).toEqual([9, 1]);
    expect(sourceIntentions(index, 'ns2', 'web').map((e) => e.row.value.Precedence)).toEqual([5, 1]);
    expect(sourceIntentions(index, 'ns1', '*').map((e) => e.row.value.Precedence)).toEqual([1]);
  });
});

describe('firstSourceMatch: the lookup by source name', () => {
  /** The definition: the first entry of the destination's precedence-ordered list whose source covers the client. */
  const reference = (list: readonly IndexedIntention[], ns: string, name: string): IndexedIntention | undefined =>
    list.find(
      (e) =>
        (e.sourceName === undefined || e.sourceName === name) &&
        (e.sourceNamespace === undefined || e.sourceNamespace === ns),
    );

  it("builds a namespace's and the wildcard's group once, shared by every destination list they end", () => {
    const index = indexOf(
      { SourceName: 'web', DestinationNS: 'ns1', DestinationName: 'db' },
      { SourceName: 'web', DestinationNS: 'ns1', DestinationName: 'cache' },
      { SourceNS: 'ns1', SourceName: 'api', DestinationNS: 'ns1', DestinationName: '*' },
      { SourceNS: '*', SourceName: '*', DestinationNS: '*', DestinationName: '*' },
    );
    const [db, cache, other] = [
      destinationIntentions(index, 'ns1', 'db'),
      destinationIntentions(index, 'ns1', 'cache'),
      destinationIntentions(index, 'ns1', 'anything'),
    ];
    expect(db.groups).toHaveLength(3);
    expect(db.groups[1]).toBe(cache.groups[1]);
    expect(db.groups[1]).toBe(other.groups[0]);
    expect(db.groups[2]).toBe(other.groups[1]);
    expect(firstSourceMatch(db, 'ns1', 'api')?.row.value.Precedence).toBe(6);
    expect(firstSourceMatch(db, 'ns2', 'api')?.row.value.Precedence).toBe(1);
  });

  it('finds what a scan of the list finds, for 300 random intention sets and every client', () => {
    let seed = 7;
    // The high bits: an LCG's low bits repeat in short cycles, which made exact pairs rare.
    const random = (n: number): number => (
      (seed = (seed * 1103515245 + 12345) % 2 ** 31),
      Math.floor((seed / 2 ** 31) * n)
    );
    const namespaces = ['ns1', 'ns2', 'ns3'];
    const names = ['a', 'b', 'c', 'd'];
    const pick = <T>(xs: readonly T[]): T => xs[random(xs.length)] as T;
    let compared = 0;
    let byPair = 0; // comparisons whose answer names the client and destination exactly
    for (let round = 0; round < 300; round++) {
      const inputs = new Map<string, IntentionInput>();
      for (let i = 0, n = 1 + random(25); i < n; i++) {
        const sourceNS = random(5) === 0 ? '*' : pick(namespaces);
        const sourceName = sourceNS === '*' || random(4) === 0 ? '*' : pick(names);
        const destinationNS = random(6) === 0 ? '*' : pick(namespaces);
        const destinationName = destinationNS === '*' || random(5) === 0 ? '*' : pick(names);
        const input = {
          SourceNS: sourceNS,
          SourceName: sourceName,
          DestinationNS: destinationNS,
          DestinationName: destinationName,
          Action: random(2) === 0 ? 'allow' : 'deny',
        } as const;
        inputs.set(`${sourceNS}/${sourceName}>${destinationNS}/${destinationName}`, input);
      }
      const index = indexOf(...inputs.values());
      for (const dns of [...namespaces, '*', 'other'])
        for (const dname of [...names, 'e'])
          for (const sns of [...namespaces, 'other'])
            for (const sname of [...names, 'e']) {
              const destination = destinationIntentions(index, dns, dname);
              const expected = reference(destination.list, sns, sname);
              expect(firstSourceMatch(destination, sns, sname)).toBe(expected);
              expect(firstMatch(index, dns, dname, sns, sname)).toBe(expected);
              const row = expected?.row.value;
              const pair = [row?.SourceNS, row?.SourceName, row?.DestinationNS, row?.DestinationName].join('/');
              if (pair === [sns, sname, dns, dname].join('/')) byPair++;
              compared++;
            }
    }
    expect(compared).toBe(300 * 5 * 5 * 4 * 5);
    expect(byPair).toBeGreaterThan(1000); // answers by an exact pair, the case the lookup by names is for
  });
});

describe('firstMatch: exact pairs found by their names', () => {
  it('checks both namespaces of the pair it finds by names, and leaves the rest to the general path', () => {
    const index = indexOf(
      { SourceNS: 'ns1', SourceName: 'web', DestinationNS: 'ns1', DestinationName: 'db', Action: 'deny' },
      { SourceNS: 'ns2', SourceName: 'web', DestinationNS: 'ns1', DestinationName: 'db', Action: 'allow' },
      { SourceNS: 'ns1', SourceName: 'web', DestinationNS: 'ns2', DestinationName: 'db', Action: 'allow' },
      { SourceNS: 'ns3', SourceName: '*', DestinationNS: 'ns1', DestinationName: 'db', Action: 'allow' },
      { SourceNS: '*', SourceName: '*', DestinationNS: '*', DestinationName: '*', Action: 'deny' },
    );
    // Two destinations are named db: the first namespace's group is kept, the other's calls go the
    // general way; in it, web from ns2 comes second, so it goes the general way too.
    expect(
      index.ownGroupByName
        .get('db')
        ?.get('web')
        ?.map((e) => e.sourceNamespace),
    ).toEqual(['ns1', 'ns2']);
    expect(firstMatch(index, 'ns1', 'db', 'ns1', 'web')?.row.value.Action).toBe('deny');
    expect(firstMatch(index, 'ns1', 'db', 'ns2', 'web')?.row.value.Action).toBe('allow');
    expect(firstMatch(index, 'ns2', 'db', 'ns1', 'web')?.row.value.Action).toBe('allow');
    expect(firstMatch(index, 'ns1', 'db', 'ns3', 'web')?.row.value.Precedence).toBe(8);
    expect(firstMatch(index, 'ns2', 'db', 'ns2', 'web')?.row.value.Precedence).toBe(1);
  });

  it('leaves a name to the general path when a stored row matches it in any namespace', () => {
    // Validation refuses `*/web`, but a row read back from a store is not trusted to have passed it.
    const exact = row({
      SourceNS: 'ns1',
      SourceName: 'web',
      DestinationNS: 'ns1',
      DestinationName: 'db',
      Action: 'allow',
    });
    const loose = row({
      SourceNS: 'ns1',
      SourceName: 'web',
      DestinationNS: 'ns1',
      DestinationName: 'db',
      Action: 'deny',
    });
    const anyNamespace = { ...loose, key: 'loose', value: { ...loose.value, SourceNS: '*', Precedence: 10 } };
    const index = buildIntentionIndex([exact, anyNamespace], 1);
    expect(index.ownGroupByName.get('db')?.get('web')?.[0]?.sourceNamespace).toBeUndefined();
    const destination = destinationIntentions(index, 'ns1', 'db');
    expect(firstMatch(index, 'ns1', 'db', 'ns1', 'web')).toBe(firstSourceMatch(destination, 'ns1', 'web'));
    expect(firstMatch(index, 'ns1', 'db', 'ns1', 'web')?.row.value.Action).toBe('deny');
  });
});

describe('decide: L7 and defaults', () => {
  it('an intention with Permissions always denies, with an L7 reason naming the permission count', () => {
    const index = indexOf({
      SourceName: 'web',
      DestinationName: 'db',
      Permissions: [
        { Action: 'allow', HTTP: { PathPrefix: '/' } },
        { Action: 'allow', HTTP: { Methods: ['GET'] } },
      ],
    });
    expect(decide(index, 'default', 'db', client('default', 'web'), true).result).toEqual({
      Authorized: false,
      Reason: 'Matched L7 intention: default/web => default/db (Precedence: 9, Permissions: 2)',
    });
  });

  it('a legacy intention names its ID in the reason', () => {
    const index = buildIntentionIndex(
      [row({ SourceName: 'web', DestinationName: 'db', Action: 'allow' }, 'b4b5c1a6-0000-4000-8000-000000000001')],
      1,
    );
    expect(decide(index, 'default', 'db', client('default', 'web'), false).result.Reason).toBe(
      'Matched L4 intention: default/web => default/db (ID: b4b5c1a6-0000-4000-8000-000000000001, Precedence: 9, Action: ALLOW)',
    );
  });

  it('no match takes the default, and every decision carries its JSON bytes as Go writes them', () => {
    const index = indexOf({ SourceName: 'web', DestinationName: 'db', Action: 'allow' });
    expect(decide(index, 'default', 'db', client('default', 'api'), true)).toBe(DEFAULT_ALLOW);
    expect(decide(index, 'default', 'db', client('default', 'api'), false)).toBe(DEFAULT_DENY);
    expect(Buffer.from(DEFAULT_DENY.json).toString()).toBe(
      '{"Authorized":false,"Reason":"Default behavior configured by ACLs"}',
    );
    const matched = decide(index, 'default', 'db', client('default', 'web'), false);
    expect(Buffer.from(matched.json).toString()).toBe(
      '{"Authorized":true,"Reason":"Matched L4 intention: default/web =\\u003e default/db (Precedence: 9, Action: ALLOW)"}',
    );
  });
});

describe('checkAuthorizeRequest', () => {
  const message = (fn: () => unknown): string => {
    try {
      fn();
    } catch (err) {
      if (err instanceof AgentError) return `${err.kind}: ${err.message}`;
      throw err;
    }
    return 'no error';
  };

  it('checks the target, then the URI, then that it names a service, then the partition', () => {
    expect(message(() => checkAuthorizeRequest({ Target: '', ClientCertURI: 'tubes' }))).toBe(
      'invalid: Target service must be specified',
    );
    expect(message(() => checkAuthorizeRequest({ Target: 'db', ClientCertURI: 'tubes' }))).toBe(
      'invalid: ClientCertURI not a valid Connect identifier',
    );
    expect(message(() => checkAuthorizeRequest({ Target: 'db', ClientCertURI: 'spiffe://1234.consul' }))).toBe(
      'invalid: ClientCertURI not a valid Service identifier',
    );
    expect(
      message(() => checkAuthorizeRequest({ Target: 'db', ClientCertURI: 'spiffe://td/agent/client/dc/dc1/id/n1' })),
    ).toBe('invalid: ClientCertURI not a valid Service identifier');
    const foreign = checkAuthorizeRequest({
      Target: 'db',
      ClientCertURI: 'spiffe://td/ap/other/ns/default/dc/dc1/svc/web',
    });
    expect(message(() => checkPartition(foreign.source))).toBe('invalid: Mismatched partitions: "other" != "default"');
    expect(
      checkAuthorizeRequest({
        Target: 'db',
        ClientCertURI: 'spiffe://fake-domain.consul/ns/default/dc/elsewhere/svc/web',
      }).source,
    ).toMatchObject({ service: 'web' });
  });
});
