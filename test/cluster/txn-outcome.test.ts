// What the etcd client says of a txn whose attempt went unanswered (docs/decisions.md#write-outcome-unknown),
// on a real etcd behind a proxy that holds etcd's answers: the txn reaches etcd and is applied, and
// its answer does not come back. A retry answered once the answers flow again says its guard failed,
// flagged `unsure` (its own first attempt moved the row); with no answer at all the txn rejects
// EtcdOutcomeUnknown; a txn that could not be sent is a plain unavailable failure. Every wait is
// for an event (a watch event, a log line, a settled call); the test timeout is the hang guard.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectEtcd,
  etcdFailure,
  EtcdOutcomeUnknown,
  type EtcdConnection,
  type EtcdTxn,
} from '../../src/state/etcd/etcd-client.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startHeldProxy, type HeldProxy } from '../support/held-proxy.js';
import { recordingLogger, type RecordingLogger } from '../support/recording-logger.js';
import { startTcpProxy } from '../support/tcp-proxy.js';

const GOING = 'etcd member not answering; using the other members';

let etcd: EtcdCluster;
let direct: EtcdConnection;
let keys = 0;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  etcd = await startEtcdCluster({ size: 1 });
  direct = connectEtcd({ endpoints: etcd.endpoints });
}, 60_000);

afterAll(async () => {
  for (const fn of cleanups.reverse()) await fn();
  direct?.close();
  await etcd?.stop();
});

const freshKey = (): Buffer => Buffer.from(`/txn-outcome/${process.pid}/${keys++}`);

/** Puts `key` only while it does not exist. */
const create = (key: Buffer, value: string): EtcdTxn => ({
  compares: [{ key, target: 'create', equals: 0 }],
  success: [{ op: 'put', key, value: Buffer.from(value) }],
  failure: [],
});

/** A client reaching etcd through a proxy that holds answers, its connection already open. */
async function heldClient(): Promise<{ proxy: HeldProxy; client: EtcdConnection; log: RecordingLogger }> {
  const proxy = await startHeldProxy(etcd.endpoints[0]!);
  const log = recordingLogger();
  const client = connectEtcd({ endpoints: [proxy.url], log });
  cleanups.push(
    () => proxy.close(),
    () => client.close(),
  );
  await client.txn(create(freshKey(), 'warm'), 5_000);
  return { proxy, client, log };
}

/** Resolves once etcd holds `key` (read from a watch that does not pass the proxy). */
async function applied(key: Buffer, from: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const watch = direct.watchRange(key, Buffer.concat([key, Buffer.from([0])]), from, {
      connected: () => {},
      events: (events) => {
        if (events.some((e) => e.type === 'put')) {
          watch.cancel();
          resolve();
        }
      },
      disconnected: reject,
      cancelled: reject,
    });
  });
}

/** Resolves once `log` holds a line with `msg` (the client judged its member hung). */
async function logged(log: RecordingLogger, msg: string): Promise<void> {
  while (!log.entries.some((e) => e.msg === msg)) await new Promise((r) => setTimeout(r, 20));
}

async function revisionNow(): Promise<number> {
  return (await direct.rangeKeys(Buffer.from('/txn-outcome-none'), Buffer.from('/txn-outcome-none0'), 5_000)).revision;
}

describe('a txn whose attempt went unanswered', () => {
  it('is flagged unsure when a retry finds the guard moved by that attempt', async () => {
    const { proxy, client, log } = await heldClient();
    const key = freshKey();
    const from = (await revisionNow()) + 1;
    proxy.hold();
    // Each attempt has a third of the deadline: the first times out, the member is probed, judged
    // hung, and tried again once its answers flow: etcd then answers that the guard failed.
    const outcome = client.txn(create(key, 'mine'), 6_000);
    await applied(key, from);
    await logged(log, GOING);
    proxy.release();
    expect(await outcome).toMatchObject({ succeeded: false, unsure: true });
    expect((await direct.getKey(key, 5_000))?.value.toString()).toBe('mine');
  }, 60_000);

  it('rejects EtcdOutcomeUnknown when no answer comes within the deadline, though etcd applied it', async () => {
    const { proxy, client } = await heldClient();
    const key = freshKey();
    const from = (await revisionNow()) + 1;
    proxy.hold();
    const outcome = client.txn(create(key, 'mine'), 1_500).then(
      () => undefined,
      (err: unknown) => err,
    );
    await applied(key, from);
    const err = await outcome;
    proxy.release();
    expect(err).toBeInstanceOf(EtcdOutcomeUnknown);
    expect(etcdFailure(err)).toBe('outcome-unknown');
    expect((await direct.getKey(key, 5_000))?.value.toString()).toBe('mine');
  }, 60_000);

  it('is a plain unavailable failure when it could not be sent, and nothing is written', async () => {
    const proxy = await startTcpProxy(etcd.endpoints[0]!);
    const client = connectEtcd({ endpoints: [proxy.url] });
    cleanups.push(
      () => proxy.close(),
      () => client.close(),
    );
    await client.txn(create(freshKey(), 'warm'), 5_000);
    // A watch through the same connection says when the client has seen the link go: a txn sent
    // before then could go out on the dying connection, and its outcome would be unknown.
    const dropped = new Promise<void>((resolve) => {
      const from = freshKey();
      client.watchRange(from, Buffer.concat([from, Buffer.from([0])]), 1, {
        connected: () => {},
        events: () => {},
        disconnected: () => resolve(),
        cancelled: () => resolve(),
      });
    });
    proxy.cut();
    await dropped;
    const key = freshKey();
    const err = await client.txn(create(key, 'mine'), 1_500).then(
      () => undefined,
      (e: unknown) => e,
    );
    proxy.restore();
    expect(err).not.toBeInstanceOf(EtcdOutcomeUnknown);
    expect(etcdFailure(err)).toBe('unavailable');
    expect(await direct.getKey(key, 5_000)).toBeUndefined();
  }, 60_000);
});
