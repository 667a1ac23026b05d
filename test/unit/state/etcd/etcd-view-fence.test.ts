// The view's side of a snapshot restore's fence (docs/decisions.md#snapshots): from the fence's put
// the watch's events are held back, the view's revision stands and no watcher wakes; with its
// delete every held event is applied in one go. Fed watch responses by hand: no etcd.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../../../../src/core/clock.js';
import { silentLogger } from '../../../../src/core/log.js';
import type { EtcdWatchEvent } from '../../../../src/state/etcd/etcd-client.js';
import { EtcdKeyLayout } from '../../../../src/state/etcd/etcd-keys.js';
import { restoreFenceKey } from '../../../../src/state/etcd/etcd-snapshot.js';
import { EtcdView } from '../../../../src/state/etcd/etcd-view.js';
import { BadRows } from '../../../../src/state/etcd/row-check.js';
import { nextMacrotask } from '../support.js';

const layout = new EtcdKeyLayout('/t/');
const FENCE = restoreFenceKey(layout);

function newView(): EtcdView {
  return new EtcdView(layout, silentLogger, new FakeClock(0), 60_000, new Map(), new BadRows(silentLogger));
}

function put(key: string, value: unknown, revision: number): EtcdWatchEvent {
  const kv = {
    key,
    value: Buffer.from(JSON.stringify(value)),
    createRevision: revision,
    modRevision: revision,
    lease: '0',
  };
  return { type: 'put', kv };
}

function del(key: string, revision: number): EtcdWatchEvent {
  return { type: 'delete', kv: { key, value: Buffer.alloc(0), createRevision: 0, modRevision: revision, lease: '0' } };
}

const row = (key: string) => layout.rowKey('mesh', key);
const values = (view: EtcdView) => view.tables.list('mesh', '').map((r) => [r.key, r.value]);

describe('EtcdView and the restore fence', () => {
  it('holds every event from the fence put to its delete, then applies them together', async () => {
    const view = newView();
    view.applyEvents([put(row('a'), 'old', 2), put(row('b'), 'old', 2)], 2);
    let woke = 0;
    view.hub.watchTable('mesh', () => woke++);
    view.applyEvents([put(FENCE, {}, 3)], 3);
    expect(view.restoring).toBe(true);
    view.applyEvents([put(row('a'), 'new', 4)], 4);
    view.applyEvents([del(row('b'), 5), put(row('c'), 'new', 5)], 5);
    // A progress notification moves nothing either.
    view.applyEvents([], 9);
    expect(values(view)).toEqual([
      ['a', 'old'],
      ['b', 'old'],
    ]);
    expect(view.revision).toBe(2);
    await nextMacrotask();
    expect(woke).toBe(0);
    let reached = false;
    void view.reached(4).then(() => (reached = true));

    view.applyEvents([put(row('d'), 'new', 6), del(FENCE, 6)], 6);
    expect(view.restoring).toBe(false);
    expect(values(view)).toEqual([
      ['a', 'new'],
      ['c', 'new'],
      ['d', 'new'],
    ]);
    expect(view.revision).toBe(6);
    await nextMacrotask();
    expect(woke).toBe(1);
    expect(reached).toBe(true);
  });

  it('applies the events of a response before the fence, and after its delete, as they come', () => {
    const view = newView();
    view.applyEvents([put(row('a'), 1, 2), put(FENCE, {}, 3), put(row('a'), 2, 4)], 4);
    expect(values(view)).toEqual([['a', 1]]);
    expect(view.revision).toBe(2);
    view.applyEvents([del(FENCE, 5), put(row('b'), 3, 6)], 6);
    expect(values(view)).toEqual([
      ['a', 2],
      ['b', 3],
    ]);
    expect(view.revision).toBe(6);
  });

  it('holds from a full read that found the fence with the state before it compacted away', () => {
    const view = newView();
    view.load({ revision: 5, kvs: [put(row('a'), 'part', 5).kv, put(FENCE, {}, 3).kv] });
    view.holdUntilFenceDown();
    view.applyEvents([put(row('b'), 'new', 6)], 6);
    expect(values(view)).toEqual([['a', 'part']]);
    view.applyEvents([del(FENCE, 7)], 7);
    expect(values(view)).toEqual([
      ['a', 'part'],
      ['b', 'new'],
    ]);
  });
});
