import { afterEach, describe, expect, it } from 'vitest';
import { decide } from '../../../../src/connect/authorize.js';
import { INTENTIONS_TABLE } from '../../../../src/connect/intentions/model.js';
import { IntentionStore } from '../../../../src/connect/intentions/store.js';
import { normalizeIntention, type IntentionInput } from '../../../../src/connect/intentions/validate.js';
import type { SpiffeService } from '../../../../src/connect/spiffe.js';
import { FakeClock } from '../../../../src/core/clock.js';
import { AgentError } from '../../../../src/core/errors.js';
import { silentLogger } from '../../../../src/core/log.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../../src/state/embedded/index.js';
import { nextMacrotask, tempDirs } from '../../state/support.js';

const web: SpiffeService = {
  kind: 'service',
  host: 'td',
  partition: 'default',
  namespace: 'default',
  datacenter: 'dc1',
  service: 'web',
};
const candidate = (input: IntentionInput) => normalizeIntention(input, 'default');
const dirs = tempDirs();
const open: { store: EmbeddedStore; intentions: IntentionStore }[] = [];

async function setUp(
  dataDir?: string,
): Promise<{ store: EmbeddedStore; intentions: IntentionStore; clock: FakeClock }> {
  const clock = new FakeClock(Date.parse('2024-05-01T10:00:00.120Z'));
  const store = await openEmbeddedStore({ dataDir, log: silentLogger, clock });
  const intentions = new IntentionStore(store, clock);
  open.push({ store, intentions });
  return { store, intentions, clock };
}

afterEach(async () => {
  for (const { store, intentions } of open.splice(0)) {
    intentions.close();
    await store.close();
  }
  await dirs.cleanupDirs();
});

async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AgentError) return `${err.code} (${err.kind}): ${err.message}`;
    throw err;
  }
  return 'no error';
}

describe('IntentionStore: the live index', () => {
  it('a write is visible to the very next read, before the deferred watch has run', async () => {
    const { intentions } = await setUp();
    expect(decide(intentions.current(), 'default', 'db', web, true).result.Authorized).toBe(true);
    await intentions.upsertExact(candidate({ SourceName: 'web', DestinationName: 'db', Action: 'deny' }));
    expect(decide(intentions.current(), 'default', 'db', web, true).result.Authorized).toBe(false);
    await intentions.deleteExact('default', 'db', 'default', 'web');
    expect(decide(intentions.current(), 'default', 'db', web, false).result.Reason).toBe(
      'Default behavior configured by ACLs',
    );
  });

  it('the table watch rebuilds after a commit with no reader asking, and stays armed', async () => {
    const { intentions, store } = await setUp();
    const before = intentions.rebuilds;
    await store.commit([{ op: 'set', table: 'kv', key: 'unrelated', value: { Flags: 0, Value: null } }]);
    await nextMacrotask();
    expect(intentions.rebuilds).toBe(before);
    for (let i = 1; i <= 2; i++) {
      await intentions.upsertExact(candidate({ SourceName: `s${i}`, DestinationName: 'db', Action: 'allow' }));
      await nextMacrotask();
      expect(intentions.rebuilds).toBe(before + i);
    }
    const snapshot = intentions.current();
    expect(intentions.rebuilds).toBe(before + 2);
    expect(snapshot.tableIndex).toBe(store.tableIndex(INTENTIONS_TABLE));
  });

  it('a rebuild keeps the entries of unchanged rows and swaps the snapshot whole', async () => {
    const { intentions } = await setUp();
    await intentions.upsertExact(candidate({ SourceName: 'a', DestinationName: 'db', Action: 'allow' }));
    await intentions.upsertExact(candidate({ SourceName: 'b', DestinationName: 'db', Action: 'allow' }));
    const first = intentions.current();
    await intentions.upsertExact(candidate({ SourceName: 'b', DestinationName: 'db', Action: 'deny' }));
    const second = intentions.current();
    expect(second).not.toBe(first);
    const entry = (snapshot: typeof first, name: string) => snapshot.all.find((e) => e.row.value.SourceName === name);
    expect(entry(second, 'a')).toBe(entry(first, 'a'));
    expect(entry(second, 'b')).not.toBe(entry(first, 'b'));
    // The old snapshot is untouched: a reader holding it sees a consistent past.
    expect(entry(first, 'b')?.row.value.Action).toBe('allow');
    expect(Object.isFrozen(second.all)).toBe(true);
  });

  it('is rebuilt from a persisted store on open', async () => {
    const dir = await dirs.make();
    const first = await setUp(dir);
    await first.intentions.upsertExact(candidate({ SourceName: 'web', DestinationName: 'db', Action: 'deny' }));
    first.intentions.close();
    await first.store.close();
    open.length = 0;
    const second = await setUp(dir);
    expect(decide(second.intentions.current(), 'default', 'db', web, true).result.Authorized).toBe(false);
  });
});

describe('IntentionStore: legacy writes', () => {
  it('creates with an ID, timestamps and a hash; refuses a second intention for the same pair', async () => {
    const { intentions } = await setUp();
    const id = await intentions.createLegacy(candidate({ SourceName: 'web', DestinationName: 'db', Action: 'allow' }));
    const stored = intentions.current().byId.get(id)?.row.value;
    expect(stored).toMatchObject({
      ID: id,
      CreatedAt: '2024-05-01T10:00:00.12Z',
      UpdatedAt: '2024-05-01T10:00:00.12Z',
      Precedence: 9,
    });
    expect(stored?.Hash).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(
      await failure(intentions.createLegacy(candidate({ SourceName: 'web', DestinationName: 'db', Action: 'deny' }))),
    ).toBe(
      `INTENTION_DUPLICATE (conflict): duplicate intention found: default/web => default/db (ID: ${id}, Precedence: 9, Action: ALLOW)`,
    );
  });

  it('updates in place or moves the source, keeps CreatedAt, and never changes the destination', async () => {
    const { intentions, clock } = await setUp();
    const id = await intentions.createLegacy(candidate({ SourceName: 'web', DestinationName: 'db', Action: 'allow' }));
    const other = await intentions.createLegacy(
      candidate({ SourceName: 'api', DestinationName: 'db', Action: 'allow' }),
    );
    clock.advance(5000);
    await intentions.updateLegacy(id, candidate({ SourceName: 'web', DestinationName: 'db', Action: 'deny' }));
    await intentions.updateLegacy(id, candidate({ SourceName: 'web2', DestinationName: 'db', Action: 'deny' }));
    const moved = intentions.current().byId.get(id)?.row.value;
    expect(moved).toMatchObject({
      SourceName: 'web2',
      Action: 'deny',
      CreatedAt: '2024-05-01T10:00:00.12Z',
      UpdatedAt: '2024-05-01T10:00:05.12Z',
    });
    expect(intentions.current().all).toHaveLength(2);
    expect(
      await failure(
        intentions.updateLegacy(id, candidate({ SourceName: 'api', DestinationName: 'db', Action: 'deny' })),
      ),
    ).toBe(
      `INTENTION_DUPLICATE (conflict): duplicate intention found: default/api => default/db (ID: ${other}, Precedence: 9, Action: ALLOW)`,
    );
    expect(
      await failure(
        intentions.updateLegacy(id, candidate({ SourceName: 'web2', DestinationName: 'cache', Action: 'deny' })),
      ),
    ).toBe(
      'INTENTION_DESTINATION_FIXED (invalid): Cannot modify Destination partition/namespace/name for an intention once it exists.',
    );
    const missing = '00000000-1111-2222-3333-444444444444';
    expect(
      await failure(
        intentions.updateLegacy(missing, candidate({ SourceName: 'x', DestinationName: 'db', Action: 'deny' })),
      ),
    ).toBe(`INTENTION_NOT_FOUND (not-found): Cannot modify non-existent intention: '${missing}'`);
    await intentions.deleteLegacy(id);
    expect(intentions.current().byId.has(id)).toBe(false);
    expect(await failure(intentions.deleteLegacy(id))).toBe(
      `INTENTION_NOT_FOUND (not-found): Cannot delete non-existent intention: '${id}'`,
    );
  });

  it('an upsert by name replaces a legacy intention with one that has no ID', async () => {
    const { intentions } = await setUp();
    const id = await intentions.createLegacy(candidate({ SourceName: 'web', DestinationName: 'db', Action: 'allow' }));
    await intentions.upsertExact(candidate({ SourceName: 'web', DestinationName: 'db', Action: 'deny' }));
    expect(intentions.current().byId.has(id)).toBe(false);
    expect(intentions.current().all[0]?.row.value).not.toHaveProperty('ID');
  });
});
