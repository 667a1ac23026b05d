// Watches asked from a revision etcd has compacted away (an agent resuming after an outage while
// etcd auto-compacts): each is cancelled and told so once, the watches beside them on the same
// stream keep their events, and nothing is thrown (etcd3 threw on the cancel request of a watch
// etcd had already ended: "Failed to find watcher for IWatchResponse", uncaught).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectEtcd, type EtcdConnection } from '../../src/state/etcd/etcd-client.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { putKey } from './etcd-put.js';

describe('watches from a compacted revision', () => {
  let etcd: EtcdCluster;
  let client: EtcdConnection;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 1 });
    client = connectEtcd({ endpoints: etcd.endpoints });
  }, 60_000);
  afterAll(async () => {
    client?.close();
    await etcd?.stop();
  });

  const put = (key: string): Promise<number> => putKey(client, key);

  it('cancels those, and the others on the same stream go on', async () => {
    let last = 0;
    for (let i = 0; i < 5; i++) last = await put(`/w/${i}`);
    await client.compact(last, 5_000);
    const told: string[] = [];
    const events = new Map<number, number>();
    let sawAll: () => void = () => {};
    let cancelledThree: () => void = () => {};
    const threeCancelled = new Promise<void>((done) => (cancelledThree = done));
    const allLive = new Promise<void>((done) => (sawAll = done));
    const froms = [1, 2, last, 3, last + 1, 0];
    // The watch from 0 starts at etcd's revision when it is created: the write must come after.
    let connectedLive: () => void = () => {};
    const liveConnected = new Promise<void>((done) => (connectedLive = done));
    const live = new Set([last, last + 1, 0]);
    const connected = new Set<number>();
    for (const from of froms) {
      client.watchRange(Buffer.from('/w/'), Buffer.from('/w0'), from, {
        connected: () => {
          if (!live.has(from)) return;
          connected.add(from);
          if (connected.size === live.size) connectedLive();
        },
        events: (evs) => {
          events.set(from, (events.get(from) ?? 0) + evs.length);
          if (events.size === 3) sawAll();
        },
        disconnected: (err) => told.push(`${from} disconnected ${String(err)}`),
        cancelled: () => {
          if (told.push(`${from} cancelled`) === 3) cancelledThree();
        },
      });
    }
    // The ones from before the compaction are cancelled; a write then reaches the three left.
    await threeCancelled;
    await liveConnected;
    await put('/w/after');
    await allLive;
    expect(told.sort()).toEqual(['1 cancelled', '2 cancelled', '3 cancelled']);
    expect([...events.keys()].sort((a, b) => a - b)).toEqual([0, last, last + 1]);
  });
});
