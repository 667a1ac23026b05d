// The size limits of catalog rows (docs/decisions.md#size-limits): a registration with every field
// at its limit is stored; one byte or one entry over is a 413 naming the field and its limit, and
// nothing of the registration is written. Anti-entropy's writes pass the same checks.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Catalog } from '../../../src/catalog/catalog.js';
import {
  ADDRESS_MAX,
  CHECK_NAME_MAX,
  DEFINITION_MAX_JSON,
  META,
  NAME_MAX,
  NOTES_MAX,
  OUTPUT_MAX,
  PROXY_MAX_JSON,
  TAGGED_ADDRESSES,
  TAG_MAX,
  TAGS_MAX,
} from '../../../src/catalog/limits.js';
import { CATALOG_CHECKS, CATALOG_NODES, CATALOG_SERVICES } from '../../../src/catalog/model.js';
import type { CheckInput, Registration, ServiceInput } from '../../../src/catalog/register.js';
import type { ErrorCode } from '../../../src/core/errors.js';
import { silentLogger } from '../../../src/core/log.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import { agentRejectionOf } from '../../support/errors.js';
import { everyone } from '../../support/identities.js';

const fill = (seed: string, bytes: number, letter = 'x'): string => (seed + letter.repeat(bytes)).slice(0, bytes);
const twoByte = (bytes: number): string => (bytes % 2 === 1 ? 'x' : '') + 'é'.repeat(Math.floor(bytes / 2));
function fullMap(limits: { pairs: number; key: number; value: number }): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < limits.pairs; i++) out[fill(`k${i}-`, limits.key, 'k')] = fill(`v${i}-`, limits.value);
  return out;
}
/** `{ [key]: "ppp…" }` whose JSON is exactly `bytes` long. */
const padded = (key: string, bytes: number, base: Record<string, unknown> = {}): Record<string, unknown> => ({
  ...base,
  [key]: 'p'.repeat(bytes - JSON.stringify({ ...base, [key]: '' }).length),
});

const SERVICE_ID = fill('web-', NAME_MAX, 'i');

function fullService(): ServiceInput {
  const tagged = fullMap(TAGGED_ADDRESSES);
  return {
    ID: SERVICE_ID,
    Service: fill('web-', NAME_MAX, 'w'),
    Kind: fill('kind-', NAME_MAX, 'k'),
    Tags: Array.from({ length: TAGS_MAX }, (_, i) => fill(`t${i}-`, TAG_MAX, 'g')),
    Address: fill('svc.', ADDRESS_MAX, 'a'),
    TaggedAddresses: Object.fromEntries(Object.entries(tagged).map(([k, v]) => [k, { Address: v, Port: 80 }])),
    Meta: fullMap(META),
    Port: 80,
    Proxy: { Config: padded('pad', PROXY_MAX_JSON - JSON.stringify({ Config: {} }).length + 2) },
  };
}

function fullCheck(n: number): CheckInput {
  return {
    CheckID: fill(`check-${n}-`, CHECK_NAME_MAX, 'c'),
    Name: fill(`name-${n}-`, CHECK_NAME_MAX, 'n'),
    Status: 'passing',
    Notes: twoByte(NOTES_MAX),
    Output: fill('out-', OUTPUT_MAX, 'o'),
    ServiceID: SERVICE_ID,
    Type: fill('http-', NAME_MAX, 't'),
    Interval: fill('10s-', NAME_MAX, 's'),
    Timeout: fill('1s-', NAME_MAX, 's'),
    Definition: padded('HTTP', DEFINITION_MAX_JSON, { Interval: '10s' }),
  };
}

function fullRegistration(): Registration {
  return {
    Datacenter: '',
    ID: fill('id-', NAME_MAX, 'i'),
    Node: fill('node-', NAME_MAX, 'n'),
    Address: fill('10.0.0.1.', ADDRESS_MAX, 'a'),
    TaggedAddresses: fullMap(TAGGED_ADDRESSES),
    NodeMeta: fullMap(META),
    Service: fullService(),
    Checks: [fullCheck(0), fullCheck(1)],
    SkipNodeUpdate: false,
  };
}

describe('catalog size limits', () => {
  let store: EmbeddedStore;
  let catalog: Catalog;
  beforeEach(async () => {
    store = await openEmbeddedStore({ log: silentLogger });
    catalog = new Catalog(store, 'dc1');
  });
  afterEach(() => store.close());

  it('stores a node, a service and checks with every field at its limit', async () => {
    const reg = fullRegistration();
    expect((await catalog.register(reg, everyone)).changed).toBe(4);
    const [node] = store.list(CATALOG_NODES, '');
    expect(node?.value).toMatchObject({ Node: reg.Node, Meta: reg.NodeMeta, TaggedAddresses: reg.TaggedAddresses });
    const [service] = store.list(CATALOG_SERVICES, '');
    expect(service?.value).toMatchObject(reg.Service as object);
    expect(JSON.stringify(reg.Service?.Proxy)).toHaveLength(PROXY_MAX_JSON);
    expect(JSON.stringify(reg.Checks[0]?.Definition)).toHaveLength(DEFINITION_MAX_JSON);
    const checks = store.list(CATALOG_CHECKS, '').map((r) => r.value);
    expect(checks).toEqual(reg.Checks.map((c) => expect.objectContaining(c)));
  });

  type Case = [string, (reg: Registration) => Registration, ErrorCode, string];
  const service = (reg: Registration, s: ServiceInput): Registration => ({ ...reg, Service: { ...reg.Service, ...s } });
  const check = (reg: Registration, c: CheckInput): Registration => ({
    ...reg,
    Checks: [reg.Checks[0] as CheckInput, { ...reg.Checks[1], ...c }],
  });
  const over = (bytes: number, max: number): string => `is ${bytes} bytes, over the limit of ${max} bytes`;

  it.each<Case>([
    ['Node', (r) => ({ ...r, Node: fill('', NAME_MAX + 1) }), 'LIMIT_BYTES', `Node ${over(257, 256)}`],
    ['ID', (r) => ({ ...r, ID: fill('', NAME_MAX + 1) }), 'LIMIT_BYTES', `ID ${over(257, 256)}`],
    ['Address', (r) => ({ ...r, Address: fill('', ADDRESS_MAX + 1) }), 'LIMIT_BYTES', `Address ${over(257, 256)}`],
    [
      'TaggedAddresses',
      (r) => ({ ...r, TaggedAddresses: { ...r.TaggedAddresses, extra: '' } }),
      'LIMIT_ENTRIES',
      'TaggedAddresses has 65 entries, over the limit of 64',
    ],
    [
      'a TaggedAddresses key',
      (r) => ({ ...r, TaggedAddresses: { [fill('', TAGGED_ADDRESSES.key + 1)]: '' } }),
      'LIMIT_BYTES',
      `TaggedAddresses key ${over(129, 128)}`,
    ],
    [
      'a tagged address',
      (r) => ({ ...r, TaggedAddresses: { lan: fill('', ADDRESS_MAX + 1) } }),
      'LIMIT_BYTES',
      `TaggedAddresses["lan"] ${over(257, 256)}`,
    ],
    [
      'NodeMeta',
      (r) => ({ ...r, NodeMeta: { ...r.NodeMeta, extra: '' } }),
      'LIMIT_ENTRIES',
      'NodeMeta has 65 entries, over the limit of 64',
    ],
    [
      'a NodeMeta key',
      (r) => ({ ...r, NodeMeta: { [fill('', META.key + 1)]: '' } }),
      'LIMIT_BYTES',
      `NodeMeta key ${over(129, 128)}`,
    ],
    [
      'a NodeMeta value',
      (r) => ({ ...r, NodeMeta: { rack: twoByte(META.value + 1) } }),
      'LIMIT_BYTES',
      `NodeMeta["rack"] ${over(513, 512)}`,
    ],
    [
      'Service.Service',
      (r) => service(r, { Service: fill('', NAME_MAX + 1) }),
      'LIMIT_BYTES',
      `Service.Service ${over(257, 256)}`,
    ],
    ['Service.ID', (r) => service(r, { ID: fill('', NAME_MAX + 1) }), 'LIMIT_BYTES', `Service.ID ${over(257, 256)}`],
    [
      'Service.Kind',
      (r) => service(r, { Kind: fill('', NAME_MAX + 1) }),
      'LIMIT_BYTES',
      `Service.Kind ${over(257, 256)}`,
    ],
    [
      'Service.Tags',
      (r) => service(r, { Tags: [...(r.Service?.Tags ?? []), 'one-more'] }),
      'LIMIT_ENTRIES',
      'Service.Tags has 129 entries, over the limit of 128',
    ],
    [
      'a tag',
      (r) => service(r, { Tags: ['a', twoByte(TAG_MAX + 1)] }),
      'LIMIT_BYTES',
      `Service.Tags[1] ${over(257, 256)}`,
    ],
    [
      'Service.Address',
      (r) => service(r, { Address: fill('', ADDRESS_MAX + 1) }),
      'LIMIT_BYTES',
      `Service.Address ${over(257, 256)}`,
    ],
    [
      'Service.TaggedAddresses',
      (r) => service(r, { TaggedAddresses: { ...r.Service?.TaggedAddresses, extra: { Address: '', Port: 1 } } }),
      'LIMIT_ENTRIES',
      'Service.TaggedAddresses has 65 entries, over the limit of 64',
    ],
    [
      "a service's tagged address",
      (r) => service(r, { TaggedAddresses: { lan: { Address: fill('', ADDRESS_MAX + 1), Port: 1 } } }),
      'LIMIT_BYTES',
      `Service.TaggedAddresses["lan"].Address ${over(257, 256)}`,
    ],
    [
      'Service.Meta',
      (r) => service(r, { Meta: { ...r.Service?.Meta, extra: '' } }),
      'LIMIT_ENTRIES',
      'Service.Meta has 65 entries, over the limit of 64',
    ],
    [
      'Service.Proxy',
      (r) =>
        service(r, { Proxy: { Config: padded('pad', PROXY_MAX_JSON + 3 - JSON.stringify({ Config: {} }).length) } }),
      'LIMIT_JSON',
      `Service.Proxy is ${PROXY_MAX_JSON + 1} bytes as JSON, over the limit of ${PROXY_MAX_JSON} bytes`,
    ],
    [
      'a CheckID',
      (r) => check(r, { CheckID: fill('', CHECK_NAME_MAX + 1) }),
      'LIMIT_BYTES',
      `Checks[1].CheckID ${over(513, 512)}`,
    ],
    [
      'a check Name',
      (r) => check(r, { Name: fill('', CHECK_NAME_MAX + 1) }),
      'LIMIT_BYTES',
      `Checks[1].Name ${over(513, 512)}`,
    ],
    ['Notes', (r) => check(r, { Notes: twoByte(NOTES_MAX + 1) }), 'LIMIT_BYTES', `Checks[1].Notes ${over(1025, 1024)}`],
    [
      'Output',
      (r) => check(r, { Output: fill('', OUTPUT_MAX + 1) }),
      'LIMIT_BYTES',
      `Checks[1].Output ${over(8193, 8192)}`,
    ],
    ['Type', (r) => check(r, { Type: fill('', NAME_MAX + 1) }), 'LIMIT_BYTES', `Checks[1].Type ${over(257, 256)}`],
    [
      'Interval',
      (r) => check(r, { Interval: fill('', NAME_MAX + 1) }),
      'LIMIT_BYTES',
      `Checks[1].Interval ${over(257, 256)}`,
    ],
    [
      'Timeout',
      (r) => check(r, { Timeout: fill('', NAME_MAX + 1) }),
      'LIMIT_BYTES',
      `Checks[1].Timeout ${over(257, 256)}`,
    ],
    [
      'Definition',
      (r) => check(r, { Definition: padded('HTTP', DEFINITION_MAX_JSON + 1) }),
      'LIMIT_JSON',
      `Checks[1].Definition is ${DEFINITION_MAX_JSON + 1} bytes as JSON, over the limit of ${DEFINITION_MAX_JSON} bytes`,
    ],
  ])('refuses %s over its limit with a 413 and writes nothing', async (_what, change, code, message) => {
    expect(await agentRejectionOf(catalog.register(change(fullRegistration()), everyone))).toEqual([code, message]);
    expect(store.index).toBe(0);
  });

  it("checks a node's fields only when the registration writes them", async () => {
    await catalog.register(fullRegistration(), everyone);
    const reg = { ...fullRegistration(), Address: '', NodeMeta: { [fill('', 200)]: '' }, SkipNodeUpdate: true };
    await expect(catalog.register({ ...reg, Service: undefined, Checks: [] }, everyone)).resolves.toBeDefined();
  });

  it("refuses anti-entropy's write of a service over a limit, as a registration", async () => {
    const node = { ID: '', Address: '10.0.0.1', TaggedAddresses: {}, Meta: {} };
    const services = [{ Service: 'web', Tags: [fill('', TAG_MAX + 1)] }];
    expect(await agentRejectionOf(catalog.syncNode('n1', { node, services, checks: [] }))).toEqual([
      'LIMIT_BYTES',
      `Service.Tags[0] ${over(257, 256)}`,
    ]);
    const checks = [{ CheckID: 'c', Output: fill('', OUTPUT_MAX + 1) }];
    expect(await agentRejectionOf(catalog.syncNode('n1', { node, services: [], checks }))).toEqual([
      'LIMIT_BYTES',
      `Check.Output ${over(8193, 8192)}`,
    ]);
  });
});
