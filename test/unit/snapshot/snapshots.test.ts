// Save and restore below HTTP (src/snapshot/snapshots.ts) on the embedded store: a round trip,
// every refusal leaving the state as it was (datacenter, backend, a row its table refuses, a
// damaged archive), and TTL sessions restored under new leases of their full time.
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { TABLE_SCHEMAS } from '../../../src/agent/tables.js';
import { FakeClock } from '../../../src/core/clock.js';
import { isAgentError } from '../../../src/core/errors.js';
import { silentLogger } from '../../../src/core/log.js';
import { LocalLeases } from '../../../src/sessions/leases.js';
import { SESSIONS_TABLE, type StoredSession } from '../../../src/sessions/model.js';
import { encodeArchive } from '../../../src/snapshot/archive.js';
import { Snapshots, storeSnapshots } from '../../../src/snapshot/snapshots.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';
import type { StoreImage, WriteOp } from '../../../src/state/types.js';

const kv = (value: string) => ({ Flags: 0, Value: Buffer.from(value).toString('base64') });
const set = (table: string, key: string, value: unknown): WriteOp => ({ op: 'set', table, key, value });

const SESSION: StoredSession = {
  ID: '0b5a1c3e-0000-4000-8000-000000000001',
  Name: 's',
  Node: 'n1',
  LockDelay: 15_000_000_000,
  Behavior: 'release',
  TTL: '30s',
  NodeChecks: [],
  ServiceChecks: null,
  lease: 'old-lease',
};

interface Fixture {
  readonly store: EmbeddedStore;
  readonly snapshots: Snapshots;
  readonly clock: FakeClock;
  readonly expired: string[];
  readonly leases: LocalLeases;
}

async function fixture(datacenter = 'dc1'): Promise<Fixture> {
  const clock = new FakeClock(1_700_000_000_000);
  const store = await openEmbeddedStore({ log: silentLogger, clock });
  const expired: string[] = [];
  const leases = new LocalLeases(clock, (id) => expired.push(id));
  const snapshots = new Snapshots({
    store,
    datacenter,
    agentVersion: '0.1.0',
    schemas: TABLE_SCHEMAS,
    clock,
    leases: () => leases,
    log: silentLogger,
  });
  return { store, snapshots, clock, expired, leases };
}

function archiveOf(image: StoreImage, over: { datacenter?: string; backend?: 'embedded' | 'etcd' } = {}): Buffer {
  return encodeArchive(
    {
      id: `${image.index}-1`,
      datacenter: over.datacenter ?? 'dc1',
      backend: over.backend ?? 'embedded',
      created: new Date(0),
      agentVersion: '0.1.0',
    },
    image,
  );
}

async function refusal(f: Fixture, archive: Buffer): Promise<string | undefined> {
  const before = { index: f.store.index, image: await f.store.exportImage() };
  const code = await f.snapshots.restore(archive).then(
    () => undefined,
    (err: unknown) => (isAgentError(err) ? err.code : String(err)),
  );
  // Nothing changed: no commit was made, every row is as it was.
  expect(f.store.index).toBe(before.index);
  expect(await f.store.exportImage()).toEqual(before.image);
  return code;
}

describe('Snapshots', () => {
  it('saves the state at its index and restores it over later changes, at a later index', async () => {
    const f = await fixture();
    await f.store.commit([set('kv', 'a', kv('1')), set('kv', 'b', kv('2'))]);
    const saved = await f.snapshots.save();
    expect(saved.index).toBe(f.store.index);
    await f.store.commit([set('kv', 'a', kv('changed')), set('kv', 'c', kv('3'))]);
    const before = f.store.index;
    const index = await f.snapshots.restore(saved.archive);
    expect(index).toBeGreaterThan(before);
    expect(f.store.list('kv', '').map((r) => [r.key, r.value])).toEqual([
      ['a', kv('1')],
      ['b', kv('2')],
    ]);
    expect(f.store.get('kv', 'a')?.modifyIndex).toBe(index);
  });

  it('names the archive by index and time, with the datacenter and backend', async () => {
    const f = await fixture('east');
    await f.store.commit([set('kv', 'a', kv('1'))]);
    const { archive } = await f.snapshots.save();
    const meta = JSON.parse(gunzipSync(archive).toString('utf8').split('\n')[1] as string) as Record<string, unknown>;
    expect(meta).toMatchObject({ ID: `1-${f.clock.now()}`, Datacenter: 'east', Backend: 'embedded', Index: 1 });
  });

  it('refuses an archive of another datacenter or backend, a row its table refuses, a damaged one: nothing changes', async () => {
    const f = await fixture();
    await f.store.commit([set('kv', 'a', kv('1'))]);
    const image: StoreImage = { index: 9, rows: [{ table: 'kv', key: 'z', value: kv('z') }], privateEntries: [] };
    expect(await refusal(f, archiveOf(image, { datacenter: 'dc2' }))).toBe('SNAPSHOT_DATACENTER_MISMATCH');
    expect(await refusal(f, archiveOf(image, { backend: 'etcd' }))).toBe('SNAPSHOT_BACKEND_MISMATCH');
    const badRow: StoreImage = { ...image, rows: [{ table: 'kv', key: 'z', value: { Flags: -1 } }] };
    expect(await refusal(f, archiveOf(badRow))).toBe('SNAPSHOT_UNREADABLE');
    const good = archiveOf(image);
    expect(await refusal(f, good.subarray(0, good.length - 1))).toBe('SNAPSHOT_DECOMPRESS');
    expect(await refusal(f, Buffer.alloc(0))).toBe('SNAPSHOT_DECOMPRESS');
    // And the same archive, whole, restores.
    await f.snapshots.restore(good);
    expect(f.store.list('kv', '').map((r) => r.key)).toEqual(['z']);
  });

  it('gives a restored TTL session a new lease of twice its TTL, as Consul resets its timer', async () => {
    const f = await fixture();
    const image: StoreImage = {
      index: 3,
      rows: [{ table: SESSIONS_TABLE, key: SESSION.ID, value: SESSION }],
      privateEntries: [],
    };
    await f.snapshots.restore(archiveOf(image));
    const row = f.store.get<StoredSession>(SESSIONS_TABLE, SESSION.ID);
    const lease = row?.value.lease;
    expect(lease).toBeDefined();
    expect(lease).not.toBe('old-lease');
    expect({ ...row?.value, lease: 'old-lease' }).toEqual(SESSION);
    f.clock.advance(59_999);
    expect(f.expired).toEqual([]);
    f.clock.advance(1);
    expect(f.expired).toEqual([lease]);
  });

  it('revokes the new leases when the store refuses the restore', async () => {
    const f = await fixture();
    await f.store.close();
    const image: StoreImage = {
      index: 3,
      rows: [{ table: SESSIONS_TABLE, key: SESSION.ID, value: SESSION }],
      privateEntries: [],
    };
    const err: unknown = await f.snapshots.restore(archiveOf(image)).catch((e: unknown) => e);
    expect(isAgentError(err) && err.code).toBe('STORE_CLOSED');
    f.clock.advance(120_000);
    expect(f.expired).toEqual([]);
  });

  it('finds the snapshot side of both stores, and none on a store without it', async () => {
    const f = await fixture();
    expect(storeSnapshots(f.store)).toBe(f.store);
    // A wrapper passing only the StateStore methods through (as a test's failing store does).
    const wrapper = { get: f.store.get.bind(f.store), commit: f.store.commit.bind(f.store) };
    expect(storeSnapshots(wrapper as unknown as EmbeddedStore)).toBeUndefined();
  });
});
