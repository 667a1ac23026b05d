import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { openEmbeddedStore } from '../../../src/state/embedded/embedded-store.js';
import { MemoryTables } from '../../../src/state/memory-tables.js';
import type { WriteOp } from '../../../src/state/types.js';

const set = (key: string, value: unknown = 1): WriteOp => ({ op: 'set', table: 'kv', key, value });
const del = (key: string): WriteOp => ({ op: 'delete', table: 'kv', key });
const MINUTE = 60_000;

describe('MemoryTables', () => {
  it('refuses to apply an index that is not after the current one', () => {
    const t = new MemoryTables();
    t.apply(1, [set('a')], 0);
    expect(() => t.apply(1, [set('b')], 0)).toThrow(RangeError);
  });

  it('keeps a tombstone per deleted key until reaped', () => {
    const t = new MemoryTables();
    t.apply(1, [set('a'), set('b')], 0);
    t.apply(2, [del('a'), del('b'), del('never')], 0);
    expect(t.tombstoneCount).toBe(2);
    t.apply(3, [set('a')], 0);
    expect(t.tombstoneCount).toBe(1);
  });

  it('reaps only tombstones older than the cutoff and raises the floor to the newest reaped', () => {
    const t = new MemoryTables();
    t.apply(1, [set('app/a'), set('app/b'), set('web/c')], 0);
    t.apply(2, [del('app/a')], 0);
    t.apply(3, [del('web/c')], 10 * MINUTE);
    t.apply(4, [del('app/b')], 20 * MINUTE);
    t.applyReap(t.planReap(10 * MINUTE));
    expect(t.tombstoneCount).toBe(1);
    // Every absent key or prefix of the table now reports at least the floor (3), never less than before.
    expect(t.keyIndex('kv', 'app/a')).toBe(3);
    expect(t.keyIndex('kv', 'web/c')).toBe(3);
    expect(t.keyIndex('kv', 'app/b')).toBe(4);
    expect(t.prefixIndex('kv', 'app/')).toBe(4);
    expect(t.prefixIndex('kv', 'web/')).toBe(3);
    expect(t.prefixIndex('kv', 'other/')).toBe(3);
    expect(t.tableIndex('kv')).toBe(4);
    expect(t.keyIndex('other-table', 'x')).toBe(0);
  });

  it('a live row reports its own modifyIndex, not the floor', () => {
    const t = new MemoryTables();
    t.apply(1, [set('a'), set('b')], 0);
    t.apply(2, [del('b')], 0);
    t.apply(3, [set('b')], 0);
    t.apply(4, [del('a')], 0);
    t.applyReap(t.planReap(0));
    expect(t.keyIndex('kv', 'a')).toBe(4);
    expect(t.keyIndex('kv', 'b')).toBe(3);
  });

  it('a plan does not reap a tombstone replaced after it was made', () => {
    const t = new MemoryTables();
    t.apply(1, [set('a')], 0);
    t.apply(2, [del('a')], 0);
    const plan = t.planReap(0);
    t.apply(3, [set('a')], 0);
    t.apply(4, [del('a')], 5 * MINUTE);
    t.applyReap(plan);
    expect(t.tombstoneCount).toBe(1);
    expect(t.keyIndex('kv', 'a')).toBe(4);
  });

  it('capture with a plan leaves the live view untouched and shows the reap in the image', () => {
    const t = new MemoryTables();
    t.apply(1, [set('a'), set('b')], 0);
    t.apply(2, [del('a')], 0);
    const plan = t.planReap(0);
    const image = t.capture(plan);
    expect(t.tombstoneCount).toBe(1);
    const kv = image.tables.find((x) => x.name === 'kv');
    expect(kv?.tombstones).toEqual([]);
    expect(kv?.reapedFloor).toBe(2);
    const copy = new MemoryTables();
    copy.load(image);
    expect(copy.keyIndex('kv', 'a')).toBe(2);
    expect(copy.get('kv', 'b')).toEqual(t.get('kv', 'b'));
    expect(copy.index).toBe(2);
  });
});

describe('tombstone reaping in the memory store', () => {
  it('drops tombstones past the TTL by the injected clock, without an index going back', async () => {
    const clock = new FakeClock(1_000_000);
    const store = await openEmbeddedStore({ log: silentLogger, clock, tombstoneTtlMs: 15 * MINUTE });
    await store.commit([set('app/a'), set('app/b')]);
    const deleted = await store.commit([del('app/a')]);
    await store.compact();
    // Too young to reap: the exact tombstone index stays.
    expect(store.keyIndex('kv', 'app/a')).toBe(deleted.index);
    await store.commit([set('app/b', 2)]);
    clock.advance(15 * MINUTE);
    await store.compact();
    expect(store.keyIndex('kv', 'app/a')).toBe(deleted.index);
    expect(store.prefixIndex('kv', 'app/')).toBe(store.get('kv', 'app/b')?.modifyIndex);
    expect(store.keyIndex('kv', 'never-written')).toBe(deleted.index);
    await store.close();
  });

  it('reaps on its own once a TTL has passed since the last reap', async () => {
    const clock = new FakeClock(0);
    const store = await openEmbeddedStore({ log: silentLogger, clock, tombstoneTtlMs: MINUTE });
    await store.commit([set('a')]);
    await store.commit([del('a')]);
    const before = store.stats.compactions;
    clock.advance(MINUTE);
    await store.commit([set('b')]);
    expect(store.stats.compactions).toBe(before + 1);
    await store.close();
  });
});
