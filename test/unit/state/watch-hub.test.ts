import { describe, expect, it } from 'vitest';
import { WatchHub } from '../../../src/state/watch-hub.js';
import { nextMacrotask, recordingLogger } from './support.js';
import { silentLogger } from '../../../src/core/log.js';

describe('WatchHub', () => {
  it('delivers nothing until flush, and then only in a later macrotask', async () => {
    const hub = new WatchHub(silentLogger);
    let calls = 0;
    hub.watchKey('kv', 'a', () => calls++);
    hub.changed('kv', 'a');
    expect(hub.watchCount).toBe(0);
    await nextMacrotask();
    expect(calls).toBe(0);
    hub.flush();
    expect(calls).toBe(0);
    await Promise.resolve();
    expect(calls).toBe(0);
    await nextMacrotask();
    expect(calls).toBe(1);
  });

  it('wakes 15,000 watchers of one key exactly once each, in registration order', async () => {
    const hub = new WatchHub(silentLogger);
    const order: number[] = [];
    for (let i = 0; i < 15_000; i++) hub.watchKey('kv', 'hot', () => order.push(i));
    expect(hub.watchCount).toBe(15_000);
    hub.changed('kv', 'hot');
    hub.changed('kv', 'hot');
    expect(hub.watchCount).toBe(0);
    hub.flush();
    await nextMacrotask();
    expect(order.length).toBe(15_000);
    expect(order.every((v, i) => v === i)).toBe(true);
  });

  it('wakes a watcher matched by several changes of a batch once', async () => {
    const hub = new WatchHub(silentLogger);
    let table = 0;
    let prefix = 0;
    hub.watchTable('kv', () => table++);
    hub.watchPrefix('kv', 'a', () => prefix++);
    hub.changed('kv', 'a1');
    hub.changed('kv', 'a2');
    hub.changed('kv', 'b');
    hub.flush();
    await nextMacrotask();
    expect([table, prefix]).toEqual([1, 1]);
  });

  it('matches prefixes both when few prefixes are watched and when many are', async () => {
    for (const extra of [0, 50]) {
      const hub = new WatchHub(silentLogger);
      const fired: string[] = [];
      for (let i = 0; i < extra; i++) hub.watchPrefix('kv', `zz${i}`, () => fired.push(`zz${i}`));
      for (const p of ['', 'a', 'ab', 'abc', 'abd', 'b']) hub.watchPrefix('kv', p, () => fired.push(p));
      hub.watchPrefix('other', 'a', () => fired.push('other'));
      hub.changed('kv', 'abc');
      hub.flush();
      await nextMacrotask();
      expect(fired.sort()).toEqual(['', 'a', 'ab', 'abc']);
      expect(hub.watchCount).toBe(extra + 3);
    }
  });

  it('cancel is exact and idempotent, before and after delivery', async () => {
    const hub = new WatchHub(silentLogger);
    const calls: string[] = [];
    const a = hub.watchKey('kv', 'a', () => calls.push('a'));
    const b = hub.watchKey('kv', 'a', () => calls.push('b'));
    expect(hub.watchCount).toBe(2);
    a();
    a();
    expect(hub.watchCount).toBe(1);
    hub.changed('kv', 'a');
    hub.flush();
    await nextMacrotask();
    expect(calls).toEqual(['b']);
    b();
    expect(hub.watchCount).toBe(0);
  });

  it('a watch cancelled after collection but before delivery is skipped and not double-counted', async () => {
    const hub = new WatchHub(silentLogger);
    const calls: string[] = [];
    hub.watchKey('kv', 'a', () => calls.push('first'));
    const second = hub.watchKey('kv', 'a', () => calls.push('second'));
    // The first callback cancels its sibling, which is already taken for delivery.
    hub.watchKey('kv', 'a', () => calls.push('third'));
    hub.changed('kv', 'a');
    const fresh = hub.watchKey('kv', 'a', () => calls.push('fresh'));
    expect(hub.watchCount).toBe(1);
    second();
    expect(hub.watchCount).toBe(1);
    hub.flush();
    await nextMacrotask();
    expect(calls).toEqual(['first', 'third']);
    fresh();
    expect(hub.watchCount).toBe(0);
  });

  it('a watch cancelled by a sibling callback during delivery is skipped', async () => {
    const hub = new WatchHub(silentLogger);
    const calls: string[] = [];
    let later: () => void = () => {};
    hub.watchKey('kv', 'a', () => {
      calls.push('canceller');
      later();
    });
    later = hub.watchKey('kv', 'a', () => calls.push('later'));
    hub.changed('kv', 'a');
    hub.flush();
    await nextMacrotask();
    expect(calls).toEqual(['canceller']);
  });

  it('logs a throwing callback and still runs the rest', async () => {
    const log = recordingLogger();
    const hub = new WatchHub(log);
    const calls: number[] = [];
    hub.watchKey('kv', 'a', () => calls.push(1));
    hub.watchKey('kv', 'a', () => {
      throw new Error('boom');
    });
    hub.watchTable('kv', () => calls.push(3));
    hub.changed('kv', 'a');
    hub.flush();
    await nextMacrotask();
    expect(calls).toEqual([3, 1]);
    expect(log.entries.filter((e) => e.level === 'error').map((e) => (e.obj['err'] as Error).message)).toEqual([
      'boom',
    ]);
  });

  it('drops an emptied Set, so watching and cancelling many keys leaves nothing behind', () => {
    const hub = new WatchHub(silentLogger);
    const cancels = Array.from({ length: 1000 }, (_, i) => hub.watchKey('kv', `k${i}`, () => {}));
    // White-box: the per-key map is what would leak if emptied Sets stayed.
    const byKey = (hub as unknown as { byKey: Map<string, Map<string, Set<unknown>>> }).byKey;
    expect(byKey.get('kv')?.size).toBe(1000);
    for (const c of cancels) c();
    expect(hub.watchCount).toBe(0);
    expect(byKey.get('kv')?.size).toBe(0);
  });
});
