// A server's claim of a mailbox request whose first attempt timed out after etcd applied it: the
// etcd client tries the txn again, and that attempt fails its compare on the server's own claim
// (an election right after a partition heals does this). The request must still be answered, by
// that server alone; before, nobody answered and the client's forwarded write ended 503.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/core/log.js';
import {
  connectEtcd,
  openEtcdMailbox,
  type EtcdConnection,
  type EtcdTxn,
  type EtcdTxnResult,
} from '../../src/state/etcd/index.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';

const PREFIX = `/svc-claim-${process.pid}/`;
let etcd: EtcdCluster;
const opened: { close(): void }[] = [];

beforeAll(async () => {
  etcd = await startEtcdCluster({ size: 1 });
}, 60_000);
afterAll(async () => {
  for (const c of opened) c.close();
  await etcd?.stop();
});

/** A connection on which every claim's txn is applied once and then answered as its repeat (compare failed). */
function claimsAnsweredAsRetries(real: EtcdConnection, claims: { count: number }): EtcdConnection {
  return new Proxy(real, {
    get(target, name, receiver) {
      if (name !== 'txn') return Reflect.get(target, name, receiver) as unknown;
      return async (txn: EtcdTxn, deadlineMs: number): Promise<EtcdTxnResult> => {
        const isClaim = txn.compares.some((c) => c.key.toString('utf8').includes('/claims/'));
        if (!isClaim) return target.txn(txn, deadlineMs);
        claims.count++;
        await target.txn(txn, deadlineMs); // applied; its answer lost
        return target.txn(txn, deadlineMs); // the retry: the claim exists now
      };
    },
  });
}

describe('a mailbox request whose claim was retried', () => {
  it('is answered once, by the server whose first attempt made the claim', async () => {
    const endpoints = { endpoints: etcd.endpoints };
    const real = connectEtcd(endpoints);
    opened.push(real);
    const claims = { count: 0 };
    const server = openEtcdMailbox({
      etcd: { shared: claimsAnsweredAsRetries(real, claims) },
      prefix: PREFIX,
      mailbox: 'writes',
      log: silentLogger,
    });
    const client = openEtcdMailbox({ etcd: endpoints, prefix: PREFIX, mailbox: 'writes', log: silentLogger });
    opened.push(server, client);
    const ran: unknown[] = [];
    server.serve((body) => {
      ran.push(body);
      return Promise.resolve({ done: body });
    });

    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await client.request({ write: i }, 9_000));

    expect(answers).toEqual([0, 1, 2, 3, 4].map((i) => ({ done: { write: i } })));
    expect(ran).toEqual([0, 1, 2, 3, 4].map((i) => ({ write: i })));
    expect(claims.count).toBeGreaterThanOrEqual(5);
  }, 60_000);
});
