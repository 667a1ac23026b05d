// The size limits of this agent's registrations (docs/decisions.md#size-limits): a service, its
// sidecar and checks are held to the catalog rows anti-entropy writes for them, so a registration
// at every limit syncs and one over is refused before anything is registered: from the API (413,
// naming the field) and from a config file (the same error, naming its block). Check outputs are
// kept to Consul's check_output_max_size at most, and a check's output never goes past the
// catalog's limit.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Catalog } from '../../../src/catalog/catalog.js';
import {
  ADDRESS_MAX,
  CHECK_NAME_MAX,
  NAME_MAX,
  NOTES_MAX,
  OUTPUT_MAX,
  PROXY_MAX_JSON,
  TAGGED_ADDRESSES,
  TAG_MAX,
  TAGS_MAX,
} from '../../../src/catalog/limits.js';
import { FakeClock } from '../../../src/core/clock.js';
import type { ErrorCode } from '../../../src/core/errors.js';
import { silentLogger } from '../../../src/core/log.js';
import { checkEntry, serviceEntry } from '../../../src/local/catalog-entries.js';
import { CheckSupervisor } from '../../../src/local/check-supervisor.js';
import { readCheckDefinition, readServiceDefinition } from '../../../src/local/definition.js';
import { LocalAgent } from '../../../src/local/local-agent.js';
import { LocalState } from '../../../src/local/local-state.js';
import { CHECK_HTTP_MAX, CHECK_TARGET_MAX } from '../../../src/local/limits.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import { agentErrorOf, agentRejectionOf, answerOfError } from '../../support/errors.js';

const fill = (seed: string, bytes: number, letter = 'x'): string => (seed + letter.repeat(bytes)).slice(0, bytes);
const twoByte = (bytes: number): string => (bytes % 2 === 1 ? 'x' : '') + 'é'.repeat(Math.floor(bytes / 2));

function setup(outputMaxSize?: number) {
  const clock = new FakeClock(1_000);
  const state = new LocalState('n1');
  const supervisor = new CheckSupervisor(state, outputMaxSize === undefined ? { clock } : { clock, outputMaxSize });
  return { state, supervisor, local: new LocalAgent(state, supervisor, undefined, undefined) };
}

/** A service with every field at the catalog's limits (Meta at Consul's), a TTL check at its own. */
function fullService(): Record<string, unknown> {
  const tagged: Record<string, unknown> = {};
  for (let i = 0; i < TAGGED_ADDRESSES.pairs; i++)
    tagged[fill(`t${i}-`, TAGGED_ADDRESSES.key, 'k')] = { Address: fill(`a${i}.`, ADDRESS_MAX), Port: 80 };
  const meta: Record<string, string> = {};
  for (let i = 0; i < 64; i++) meta[fill(`m${i}-`, 128, 'k')] = fill(`v${i}-`, 512);
  const bare = JSON.stringify({ Config: { pad: '' } }).length;
  return {
    Name: fill('web-', NAME_MAX, 'w'),
    ID: fill('web-id-', NAME_MAX, 'i'),
    Tags: Array.from({ length: TAGS_MAX }, (_, i) => fill(`t${i}-`, TAG_MAX, 'g')),
    Address: fill('web.', ADDRESS_MAX, 'a'),
    TaggedAddresses: tagged,
    Meta: meta,
    Port: 80,
    Proxy: { Config: { pad: 'p'.repeat(PROXY_MAX_JSON - bare) } },
    Checks: [
      {
        CheckID: fill('c-', CHECK_NAME_MAX, 'c'),
        Name: fill('n-', CHECK_NAME_MAX, 'n'),
        Notes: twoByte(NOTES_MAX),
        TTL: '10s',
      },
      { Name: 'http', HTTP: fill('http://h/', CHECK_HTTP_MAX, 'p'), Interval: '10s' },
      { Name: 'tcp', TCP: fill('h:', CHECK_TARGET_MAX, '1'), Interval: '10s' },
      { Name: 'grpc', GRPC: fill('h:1/', CHECK_TARGET_MAX, 's'), Interval: '10s' },
    ],
  };
}

describe('service registrations', () => {
  let store: EmbeddedStore;
  beforeEach(async () => {
    store = await openEmbeddedStore({ log: silentLogger });
  });
  afterEach(() => store.close());

  it('registers a service at every limit, and anti-entropy writes it to the catalog', async () => {
    const { local, state } = setup();
    await local.registerService(readServiceDefinition(fullService()));
    const node = { ID: '', Address: '10.0.0.1', TaggedAddresses: {}, Meta: {} };
    const services = [...state.services()].map(serviceEntry);
    expect(JSON.stringify(services[0]?.Proxy)).toHaveLength(PROXY_MAX_JSON);
    const checks = [...state.checks()].map(checkEntry);
    expect(checks).toHaveLength(4);
    const written = await new Catalog(store, 'dc1').syncNode('n1', { node, services, checks });
    expect(written.changed).toBe(6);
  });

  type Case = [string, Record<string, unknown>, ErrorCode, string];
  const over = (bytes: number, max: number): string => `is ${bytes} bytes, over the limit of ${max} bytes`;
  const cases: Case[] = [
    ['Name', { Name: fill('', NAME_MAX + 1) }, 'LIMIT_BYTES', `Name ${over(257, 256)}`],
    ['ID', { ID: fill('', NAME_MAX + 1) }, 'LIMIT_BYTES', `ID ${over(257, 256)}`],
    [
      'Tags',
      { Tags: Array.from({ length: TAGS_MAX + 1 }, () => 't') },
      'LIMIT_ENTRIES',
      'Tags has 129 entries, over the limit of 128',
    ],
    ['a tag', { Tags: [twoByte(TAG_MAX + 1)] }, 'LIMIT_BYTES', `Tags[0] ${over(257, 256)}`],
    ['Address', { Address: fill('', ADDRESS_MAX + 1) }, 'LIMIT_BYTES', `Address ${over(257, 256)}`],
    [
      'Proxy',
      { Proxy: { Config: { pad: 'p'.repeat(PROXY_MAX_JSON) } } },
      'LIMIT_JSON',
      `Proxy is ${PROXY_MAX_JSON + JSON.stringify({ Config: { pad: '' } }).length} bytes as JSON, over the limit of ${PROXY_MAX_JSON} bytes`,
    ],
    [
      'a check Name',
      { Check: { Name: fill('', CHECK_NAME_MAX + 1), TTL: '1s' } },
      'LIMIT_BYTES',
      `Checks[0].Name ${over(513, 512)}`,
    ],
    [
      'Notes',
      { Checks: [{ TTL: '1s', Notes: twoByte(NOTES_MAX + 1) }] },
      'LIMIT_BYTES',
      `Checks[0].Notes ${over(1025, 1024)}`,
    ],
    [
      'HTTP',
      { Checks: [{ TTL: '1s' }, { HTTP: fill('http://', CHECK_HTTP_MAX + 1), Interval: '1s' }] },
      'LIMIT_BYTES',
      `Checks[1].HTTP ${over(2049, 2048)}`,
    ],
    [
      'TCP',
      { Check: { TCP: fill('h:', CHECK_TARGET_MAX + 1), Interval: '1s' } },
      'LIMIT_BYTES',
      `Checks[0].TCP ${over(513, 512)}`,
    ],
    [
      'GRPC',
      { Check: { GRPC: fill('h:', CHECK_TARGET_MAX + 1), Interval: '1s' } },
      'LIMIT_BYTES',
      `Checks[0].GRPC ${over(513, 512)}`,
    ],
    [
      "the sidecar's name",
      { Name: fill('', NAME_MAX - 1), Connect: { SidecarService: {} } },
      'LIMIT_BYTES',
      `Connect.SidecarService.Name ${over(NAME_MAX - 1 + 14, 256)}`,
    ],
    [
      "a sidecar's tag",
      { Connect: { SidecarService: { Tags: [fill('', TAG_MAX + 1)] } } },
      'LIMIT_BYTES',
      `Connect.SidecarService.Tags[0] ${over(257, 256)}`,
    ],
    [
      "a sidecar's check",
      { Connect: { SidecarService: { Check: { TTL: '1s', Notes: fill('', NOTES_MAX + 1) } } } },
      'LIMIT_BYTES',
      `Connect.SidecarService.Checks[0].Notes ${over(1025, 1024)}`,
    ],
  ];

  it.each(cases)('refuses %s over its limit with a 413, registering nothing', async (_what, fields, code, message) => {
    const { local, state } = setup();
    const def = readServiceDefinition({ Name: 'web', ...fields });
    const err = agentErrorOf(() => local.validateService(def));
    expect([err.code, answerOfError(err)]).toEqual([code, [413, message]]);
    expect(await agentRejectionOf(local.registerService(def))).toEqual([code, message]);
    expect([...state.services()]).toEqual([]);
  });

  it("keeps Consul's 400 and text for Meta", () => {
    const { local } = setup();
    const err = agentErrorOf(() =>
      local.validateService(readServiceDefinition({ Name: 'web', Meta: { k: fill('', 513) } })),
    );
    expect(answerOfError(err)).toEqual([
      400,
      `Invalid Service Meta: Couldn't load metadata pair('k', '${fill('', 513)}'): Value is too long (limit: 512 characters)`,
    ]);
  });
});

describe('check registrations and maintenance', () => {
  it('registers a check at its limits and refuses one over', async () => {
    const { local } = setup();
    const def = {
      Name: fill('n-', CHECK_NAME_MAX),
      Notes: twoByte(NOTES_MAX),
      HTTP: fill('http://', CHECK_HTTP_MAX),
      Interval: '1s',
    };
    await expect(local.registerCheck(readCheckDefinition(def))).resolves.toBeDefined();
    expect(
      agentErrorOf(() => local.validateCheck(readCheckDefinition({ ...def, Notes: twoByte(NOTES_MAX + 1) }))).message,
    ).toBe(`Notes is 1025 bytes, over the limit of 1024 bytes`);
    expect(
      await agentRejectionOf(local.registerCheck(readCheckDefinition({ ...def, ID: fill('', CHECK_NAME_MAX + 1) }))),
    ).toEqual(['LIMIT_BYTES', 'CheckID is 513 bytes, over the limit of 512 bytes']);
  });

  it('takes a maintenance reason at the Notes limit and refuses one over', async () => {
    const { local, state } = setup();
    await local.registerService(readServiceDefinition({ Name: 'web' }));
    await local.setMaintenance('web', true, twoByte(NOTES_MAX));
    expect(state.check('_service_maintenance:web')?.notes).toBe(twoByte(NOTES_MAX));
    expect(await agentRejectionOf(local.setNodeMaintenance(true, twoByte(NOTES_MAX + 1)))).toEqual([
      'LIMIT_BYTES',
      'reason is 1025 bytes, over the limit of 1024 bytes',
    ]);
    expect(state.check('_node_maintenance')).toBeUndefined();
  });
});

describe('config file registrations', () => {
  it('are held to the same limits, the error naming the block', () => {
    const { local } = setup();
    const prepare = (services: Record<string, unknown>[], checks: Record<string, unknown>[] = []) =>
      agentErrorOf(() => local.prepareConfig({ services, checks }));
    const service = prepare([{ name: 'ok' }, { name: 'web', tags: [fill('', TAG_MAX + 1)] }]);
    expect([service.code, service.message]).toEqual([
      'LIMIT_BYTES',
      `service "web" (services[1]): Tags[0] is 257 bytes, over the limit of 256 bytes`,
    ]);
    const check = prepare([], [{ name: 'c', ttl: '1s', notes: fill('', NOTES_MAX + 1) }]);
    expect(check.message).toBe('check "c" (checks[0]): Notes is 1025 bytes, over the limit of 1024 bytes');
    expect(() => local.prepareConfig({ services: [readable()], checks: [] })).not.toThrow();
  });
});

/** A config-file service (snake_case keys) at its limits. */
function readable(): Record<string, unknown> {
  return { name: fill('web-', NAME_MAX), tags: Array.from({ length: TAGS_MAX }, () => fill('', TAG_MAX)) };
}

describe('check output', () => {
  it("keeps at most Consul's 4 KiB of a TTL output, whatever OutputMaxSize or check_output_max_size asks", () => {
    for (const { agent, check } of [
      { agent: 10_000, check: 0 },
      { agent: undefined, check: 10_000 },
    ]) {
      const { state, supervisor } = setup(agent);
      state.addCheck(readCheckDefinition({ Name: 'ttl', TTL: '10s', OutputMaxSize: check }));
      supervisor.updateTtl('ttl', 'passing', 'o'.repeat(20_000));
      expect(state.check('ttl')?.output).toBe(`${'o'.repeat(4096)} ... (captured 4096 of 20000 bytes)`);
    }
  });

  it('keeps a lower OutputMaxSize as Consul does', () => {
    const { state, supervisor } = setup();
    state.addCheck(readCheckDefinition({ Name: 'ttl', TTL: '10s', OutputMaxSize: 8 }));
    supervisor.updateTtl('ttl', 'passing', '0123456789');
    expect(state.check('ttl')?.output).toBe('01234567 ... (captured 8 of 10 bytes)');
  });

  it("never holds an output past the catalog's limit, cut at a character", () => {
    const { state } = setup();
    state.addCheck(readCheckDefinition({ Name: 'c', TTL: '10s' }));
    state.updateCheck('c', 'passing', `x${'é'.repeat(OUTPUT_MAX)}`);
    const output = state.check('c')?.output ?? '';
    expect(Buffer.byteLength(output)).toBe(OUTPUT_MAX - 1);
    expect(output.endsWith('é')).toBe(true);
  });
});
