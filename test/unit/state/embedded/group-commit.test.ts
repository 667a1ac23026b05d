import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/core/log.js';
import { openEmbeddedStore } from '../../../../src/state/embedded/embedded-store.js';
import type { WriteOp } from '../../../../src/state/types.js';
import { tempDirs } from '../support.js';

const set = (key: string, value: unknown): WriteOp => ({ op: 'set', table: 'kv', key, value });
const dirs = tempDirs();
afterEach(dirs.cleanupDirs);

describe('group commit', () => {
  it('writes commits issued in one tick as one batch (one write, one fdatasync)', async () => {
    const store = await openEmbeddedStore({ dataDir: await dirs.make(), log: silentLogger });
    const results = await Promise.all(Array.from({ length: 200 }, (_, i) => store.commit([set(`k${i}`, i)])));
    expect(store.stats.walBatches).toBe(1);
    expect(results.map((r) => r.index)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    await store.close();
  });

  it('groups the commits of concurrent writers into fewer batches than commits', async () => {
    const store = await openEmbeddedStore({ dataDir: await dirs.make(), log: silentLogger });
    const writers = 64;
    const each = 10;
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let i = 0; i < each; i++) await store.commit([set(`w${w}`, i)]);
      }),
    );
    expect(store.stats.commits).toBe(writers * each);
    expect(store.stats.walBatches).toBeLessThan(writers * each);
    expect(store.list('kv', '').every((row) => row.value === each - 1)).toBe(true);
    await store.close();
  });

  it('shows a write to readers and watchers only once it is durable', async () => {
    const store = await openEmbeddedStore({ dataDir: await dirs.make(), log: silentLogger });
    let woken = false;
    store.watchOnce({ table: 'kv', key: 'a' }, () => (woken = true));
    const pending = store.commit([set('a', 1)]);
    await Promise.resolve();
    expect(store.get('kv', 'a')).toBeUndefined();
    expect(store.index).toBe(0);
    const r = await pending;
    expect(store.stats.walBatches).toBe(1);
    expect(store.get('kv', 'a')?.modifyIndex).toBe(r.index);
    expect(woken).toBe(false);
    await store.close();
  });

  it('rejects an invalid commit without taking an index', async () => {
    const store = await openEmbeddedStore({ dataDir: await dirs.make(), log: silentLogger });
    const bad = [
      [{ op: 'set', table: 'kv', key: 'a' }],
      [{ op: 'set', table: '', key: 'a', value: 1 }],
      [{ op: 'delete', table: 'kv', key: 1 }],
      [{ op: 'set', table: 'kv', key: 'a', value: 1, ifIndex: -1 }],
      [{ op: 'truncate', table: 'kv' }],
      [{ op: 'set', table: 'kv', key: 'a', value: 10n }],
    ] as unknown as WriteOp[][];
    for (const ops of bad) {
      await expect(store.commit(ops)).rejects.toMatchObject({ code: 'STATE_INVALID_OP', kind: 'invalid' });
    }
    expect((await store.commit([set('a', 1)])).index).toBe(1);
    await store.close();
  });
});
