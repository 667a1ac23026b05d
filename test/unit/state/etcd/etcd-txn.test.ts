// The etcd transaction a commit becomes: guards as compares, the last write per key, deletes of a
// prefix split around keys the same commit puts, a table's marker only with a delete in it, the
// clock key on failure, and the size limit.
import { describe, expect, it } from 'vitest';
import { isAgentError } from '../../../../src/core/errors.js';
import type { EtcdTxnOp } from '../../../../src/state/etcd/etcd-client.js';
import { EtcdKeyLayout } from '../../../../src/state/etcd/etcd-keys.js';
import { commitTxn } from '../../../../src/state/etcd/etcd-txn.js';
import type { WriteOp } from '../../../../src/state/types.js';

const layout = new EtcdKeyLayout('/p/');

/** Ops as readable strings: `put key=value`, `del key`, `del [from, to)`. */
function show(ops: readonly EtcdTxnOp[]): string[] {
  return ops.map((op) => {
    if (op.op === 'put') return `put ${op.key.toString()}=${op.value.toString()}`;
    return op.end === undefined
      ? `del ${op.key.toString()}`
      : `del [${JSON.stringify(op.key.toString())}, ${JSON.stringify(op.end.toString())})`;
  });
}

describe('commitTxn', () => {
  it('turns guards into compares on create and mod revision', () => {
    const txn = commitTxn(layout, [
      { op: 'set', table: 'kv', key: 'a', value: 1, ifIndex: 0 },
      { op: 'delete', table: 'kv', key: 'b', ifIndex: 7 },
    ]);
    expect(txn.compares.map((c) => [c.key.toString(), c.target, c.equals])).toEqual([
      ['/p/data/kv/a', 'create', 0],
      ['/p/data/kv/b', 'mod', 7],
    ]);
    expect(show(txn.success)).toEqual(['put /p/data/kv/a=1', 'del /p/data/kv/b', 'put /p/meta/tables/kv=']);
    expect(show(txn.failure)).toEqual(['put /p/meta/clock=']);
  });

  it('writes each key once, as the last op on it leaves it', () => {
    const txn = commitTxn(layout, [
      { op: 'set', table: 'kv', key: 'a', value: 1 },
      { op: 'set', table: 'kv', key: 'a', value: { n: 2 } },
      { op: 'delete', table: 'kv', key: 'b' },
      { op: 'set', table: 'kv', key: 'b', value: 'x' },
      { op: 'set', table: 'other', key: 'c', value: true },
      { op: 'delete', table: 'other', key: 'c' },
    ]);
    // `kv` ends with no delete (b is put again): no marker; `other` deletes c: its marker moves.
    expect(show(txn.success)).toEqual([
      'put /p/data/kv/a={"n":2}',
      'put /p/data/kv/b="x"',
      'del /p/data/other/c',
      'put /p/meta/tables/other=',
    ]);
  });

  it("moves a table's marker only with a delete in it: a commit of puts is one event per row at every view", () => {
    const puts = commitTxn(layout, [
      { op: 'set', table: 'catalog-services', key: 'n/s', value: 1 },
      { op: 'set', table: 'catalog-index', key: 's/s', value: true },
    ]);
    expect(show(puts.success)).toEqual(['put /p/data/catalog-services/n/s=1', 'put /p/data/catalog-index/s/s=true']);
    expect(show(puts.failure)).toEqual(['put /p/meta/clock=']);
    // A delete of a key not there still takes a revision: by the marker.
    const deletes = commitTxn(layout, [
      { op: 'delete', table: 'catalog-services', key: 'n/gone' },
      { op: 'set', table: 'catalog-index', key: 's/s', value: true },
      { op: 'delete-prefix', table: 'catalog-checks', prefix: 'n/' },
    ]);
    expect(show(deletes.success)).toEqual([
      'del /p/data/catalog-services/n/gone',
      'put /p/data/catalog-index/s/s=true',
      'del ["/p/data/catalog-checks/n/", "/p/data/catalog-checks/n0")',
      'put /p/meta/tables/catalog-services=',
      'put /p/meta/tables/catalog-checks=',
    ]);
  });

  it('splits a deleted prefix around the keys the commit puts under it, and deletes earlier puts', () => {
    const txn = commitTxn(layout, [
      { op: 'set', table: 'kv', key: 'app/early', value: 1 },
      { op: 'delete-prefix', table: 'kv', prefix: 'app/' },
      { op: 'set', table: 'kv', key: 'app/z', value: 2 },
      { op: 'set', table: 'kv', key: 'app/b', value: 3 },
      { op: 'set', table: 'kv', key: 'web', value: 4 },
    ]);
    expect(show(txn.success)).toEqual([
      'del /p/data/kv/app/early',
      'put /p/data/kv/app/z=2',
      'put /p/data/kv/app/b=3',
      'put /p/data/kv/web=4',
      'del ["/p/data/kv/app/", "/p/data/kv/app/b")',
      'del ["/p/data/kv/app/b\\u0000", "/p/data/kv/app/z")',
      'del ["/p/data/kv/app/z\\u0000", "/p/data/kv/app0")',
      'put /p/meta/tables/kv=',
    ]);
  });

  it('writes the clock key when a commit has no ops', () => {
    expect(show(commitTxn(layout, []).success)).toEqual(['put /p/meta/clock=']);
  });

  it('refuses a commit that needs more operations than one etcd txn holds', () => {
    // Three puts, a delete and its table's marker: five operations.
    const ops: WriteOp[] = [
      ...Array.from({ length: 3 }, (_, i) => ({ op: 'set' as const, table: 'kv', key: `k${i}`, value: i })),
      { op: 'delete', table: 'kv', key: 'gone' },
    ];
    expect(commitTxn(layout, ops, 5).success).toHaveLength(5);
    let err: unknown;
    try {
      commitTxn(layout, [...ops, { op: 'set', table: 'kv', key: 'k9', value: 9 }], 5);
    } catch (e) {
      err = e;
    }
    expect(isAgentError(err) && err.code === 'STATE_COMMIT_TOO_LARGE' && err.kind === 'too-large').toBe(true);
  });

  it('keeps meshes apart: a prefix is always a whole path segment', () => {
    const txn = commitTxn(new EtcdKeyLayout('/svc'), [{ op: 'set', table: 'kv', key: 'k', value: 1 }]);
    expect(show(txn.success)[0]).toBe('put /svc/data/kv/k=1');
  });

  it('refuses a table name holding the key separator', () => {
    expect(() => commitTxn(layout, [{ op: 'set', table: 'a/b', key: 'k', value: 1 }])).toThrow(/contains "\/"/);
  });
});
