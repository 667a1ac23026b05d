// The etcd store's answer to a commit whose outcome is unknown (docs/decisions.md#write-outcome-unknown),
// on a connection whose txn answers are scripted: a txn that rejects EtcdOutcomeUnknown fails its
// commit with STATE_WRITE_OUTCOME_UNKNOWN and the commits queued behind it (never sent) with
// `No cluster leader`; a guard that failed after an attempt went unanswered is no `false`.
import { GRPCUnavailableError } from 'etcd3';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/core/log.js';
import {
  EtcdOutcomeUnknown,
  type EtcdConnection,
  type EtcdTxn,
  type EtcdTxnResult,
} from '../../../../src/state/etcd/etcd-client.js';
import { openEtcdStore } from '../../../../src/state/etcd/etcd-store.js';
import type { WriteOp } from '../../../../src/state/types.js';

/** An etcd holding nothing, whose txns wait until the test answers them, one by one. */
function scriptedEtcd(): {
  connection: EtcdConnection;
  sent: EtcdTxn[];
  answer(outcome: EtcdTxnResult | Error): void;
  whenSent(count: number): Promise<void>;
} {
  const sent: EtcdTxn[] = [];
  const pending: { resolve(r: EtcdTxnResult): void; reject(e: Error): void }[] = [];
  const waiters: (() => void)[] = [];
  const connection = {
    rangeKeys: () => Promise.resolve({ revision: 1, kvs: [] }),
    watchRange: () => ({ cancel: () => {} }),
    txn: (txn: EtcdTxn) =>
      new Promise<EtcdTxnResult>((resolve, reject) => {
        sent.push(txn);
        pending.push({ resolve, reject });
        for (const wake of waiters.splice(0)) wake();
      }),
    close: () => {},
  } as unknown as EtcdConnection;
  return {
    connection,
    sent,
    answer(outcome) {
      const next = pending.shift()!;
      if (outcome instanceof Error) next.reject(outcome);
      else next.resolve(outcome);
    },
    async whenSent(count) {
      while (sent.length < count) await new Promise<void>((wake) => waiters.push(wake));
    },
  };
}

const open = (connection: EtcdConnection) =>
  openEtcdStore({ etcd: { shared: connection }, log: silentLogger, readThroughTables: ['kv'] });

const set = (key: string, ifIndex?: number): WriteOp => ({
  op: 'set',
  table: 'kv',
  key,
  value: { Value: key },
  ...(ifIndex === undefined ? {} : { ifIndex }),
});

const rejection = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => undefined,
    (err: unknown) => err,
  );

describe('a commit of unknown outcome', () => {
  it('fails with STATE_WRITE_OUTCOME_UNKNOWN; the commit queued behind it, never sent, with No cluster leader', async () => {
    const etcd = scriptedEtcd();
    const store = await open(etcd.connection);
    const first = rejection(store.commit([set('a')]));
    // Writes the same row: it waits for the first, unsent.
    const second = rejection(store.commit([set('a')]));
    await etcd.whenSent(1);
    etcd.answer(new EtcdOutcomeUnknown(new GRPCUnavailableError('no etcd member is answering')));
    expect(await first).toMatchObject({ code: 'STATE_WRITE_OUTCOME_UNKNOWN', kind: 'unavailable' });
    expect(await second).toMatchObject({ code: 'STATE_NO_LEADER', message: 'No cluster leader' });
    expect(etcd.sent).toHaveLength(1);
    expect(store.health.connected).toBe(false);
  });

  it('is not a failed guard: a guard that failed after an unanswered attempt fails the commit as unknown', async () => {
    const etcd = scriptedEtcd();
    const store = await open(etcd.connection);
    const unsure = rejection(store.commit([set('a', 0)]));
    await etcd.whenSent(1);
    etcd.answer({ succeeded: false, revision: 7, unsure: true });
    expect(await unsure).toMatchObject({ code: 'STATE_WRITE_OUTCOME_UNKNOWN' });
    // A guard that failed with every attempt answered is the caller's `false`, as ever.
    const lost = store.commit([set('b', 0)]);
    await etcd.whenSent(2);
    etcd.answer({ succeeded: false, revision: 8 });
    expect(await lost).toEqual({ ok: false, index: 8 });
    expect(etcd.sent).toHaveLength(2);
  });

  it('keeps No cluster leader for a commit etcd never took', async () => {
    const etcd = scriptedEtcd();
    const store = await open(etcd.connection);
    const refused = rejection(store.commit([set('a')]));
    await etcd.whenSent(1);
    etcd.answer(new GRPCUnavailableError('no etcd member is answering'));
    expect(await refused).toMatchObject({ code: 'STATE_NO_LEADER', message: 'No cluster leader' });
  });
});
