// A commit of a read-through table (KV) writes nothing inside the range every agent's view watches,
// whatever its shape and whether its guard holds (docs/decisions.md D15); a mesh table's still does.
import { describe, expect, it } from 'vitest';
import type { EtcdTxnOp } from '../../../../src/state/etcd/etcd-client.js';
import { EtcdKeyLayout } from '../../../../src/state/etcd/etcd-keys.js';
import { commitTxn, reachesView } from '../../../../src/state/etcd/etcd-txn.js';
import type { WriteOp } from '../../../../src/state/types.js';

const layout = new EtcdKeyLayout('/p/', new Set(['kv']));

/** The keys an op touches that fall inside the view's range [viewStart, viewEnd). */
function inView(ops: readonly EtcdTxnOp[]): string[] {
  const inside = (key: Buffer): boolean =>
    Buffer.compare(key, layout.viewStart) >= 0 && Buffer.compare(key, layout.viewEnd) < 0;
  return ops
    .filter(
      (op) =>
        inside(op.key) ||
        (op.op === 'delete' &&
          op.end !== undefined &&
          Buffer.compare(op.end, layout.viewStart) > 0 &&
          Buffer.compare(op.key, layout.viewEnd) < 0),
    )
    .map((op) => op.key.toString());
}

const KV_COMMITS: WriteOp[][] = [
  [{ op: 'set', table: 'kv', key: 'a', value: 1 }],
  [{ op: 'set', table: 'kv', key: 'a', value: 1, ifIndex: 9 }],
  [{ op: 'delete', table: 'kv', key: 'a', ifIndex: 0 }],
  [
    { op: 'delete-prefix', table: 'kv', prefix: '' },
    { op: 'set', table: 'kv', key: 'b', value: 2 },
  ],
];

describe('read-through commits', () => {
  it('write nothing inside the view range, on success or failure, and still take a revision', () => {
    for (const ops of KV_COMMITS) {
      const txn = commitTxn(layout, ops);
      expect(inView(txn.success)).toEqual([]);
      expect(inView(txn.failure)).toEqual([]);
      // Each branch writes at least the table's marker, so the commit takes a revision.
      expect(txn.failure.map((op) => op.key.toString())).toEqual(['/p/bulk/kv']);
      expect(txn.success.some((op) => op.op === 'put' && op.key.toString() === '/p/bulk/kv')).toBe(true);
      expect(reachesView(layout, ops)).toBe(false);
    }
  });

  it('a commit that touches a mesh table still reaches the view', () => {
    const ops: WriteOp[] = [
      { op: 'set', table: 'kv', key: 'a', value: 1 },
      { op: 'set', table: 'intentions', key: 'x', value: 1, ifIndex: 3 },
    ];
    const txn = commitTxn(layout, ops);
    // Its row's put takes the revision; the mesh table's marker moves only with a delete.
    expect(inView(txn.success)).toEqual(['/p/data/intentions/x']);
    expect(inView(txn.failure)).toEqual(['/p/meta/clock']);
    expect(reachesView(layout, ops)).toBe(true);
    expect(reachesView(layout, [])).toBe(true);
  });
});
