// Whose are the watchers etcd still holds once every agent has left through `etcd grpc-proxy`
// (docs/scale.md)? etcd's watcher count (its /metrics) before the proxy starts, with the proxy up and
// no client, then for one client's watch of a range: opened, cancelled as an agent's close does
// (src/state/etcd/etcd-client.ts, watchRange), the client closed, and after an event in the range;
// directly and through the proxy, and through the proxy for clients closed without a cancel (a
// crashed agent). Counts, not timings: each step waits a second for the proxy to pass it on.
// Run: node dist/bench/probes/grpc-proxy-watchers.js
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { connectEtcd, type EtcdConnection, type EtcdWatch } from '../../src/state/etcd/index.js';
import { ensureEtcd, startEtcdCluster } from '../../test/support/etcd.js';
import { sampleEtcd } from '../scale/etcd-metrics.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { freePort, LOOPBACK, waitForPort } from '../support/ports.js';
import { formatTable } from '../support/report.js';

const START = Buffer.from('/probe/');
const END = Buffer.from('/probe0');
const SETTLE_MS = 1_000;

async function watchOnce(connection: EtcdConnection): Promise<EtcdWatch> {
  let connected: () => void = () => {};
  const ready = new Promise<void>((resolve) => (connected = resolve));
  const watch = connection.watchRange(START, END, 1, {
    connected: () => connected(),
    events: () => {},
    disconnected: () => {},
    cancelled: () => {},
  });
  await ready;
  return watch;
}

export async function runGrpcProxyWatchers(): Promise<string> {
  const etcd = await startEtcdCluster({ size: 1 });
  const url = etcd.endpoints[0] as string;
  const watchers = async (): Promise<number> => (await sampleEtcd(url)).watchers;
  const rows: (string | number)[][] = [];
  const noClient = await watchers();
  const port = await freePort();
  const proxy = spawn(
    await ensureEtcd(),
    ['grpc-proxy', 'start', `--endpoints=${etcd.endpoints.join(',')}`, `--listen-addr=${LOOPBACK}:${port}`],
    { stdio: 'ignore' },
  );
  const writer = connectEtcd({ endpoints: etcd.endpoints });
  try {
    await waitForPort(port, 30_000, () => undefined);
    await sleep(SETTLE_MS);
    rows.push(['etcd alone, then the proxy up with no client', noClient, await watchers(), '', '', '']);
    const trial = async (name: string, endpoints: string[], cancel: boolean, clients: number): Promise<void> => {
      const before = await watchers();
      const connections = Array.from({ length: clients }, () => connectEtcd({ endpoints }));
      const watches = await Promise.all(connections.map(watchOnce));
      await sleep(SETTLE_MS);
      const watching = await watchers();
      if (cancel) for (const w of watches) w.cancel();
      await sleep(SETTLE_MS);
      const cancelled = await watchers();
      for (const c of connections) c.close();
      await sleep(SETTLE_MS);
      const closed = await watchers();
      const put = { op: 'put' as const, key: Buffer.from(`${START.toString()}k`), value: Buffer.from('v') };
      await writer.txn({ compares: [], success: [put], failure: [] }, 5_000);
      await sleep(SETTLE_MS);
      rows.push([name, before, watching, cancelled, closed, await watchers()]);
    };
    const viaProxy = [`http://${LOOPBACK}:${port}`];
    await trial('one watch, direct', etcd.endpoints, true, 1);
    await trial('one watch, through the proxy', viaProxy, true, 1);
    await trial('one watch, through the proxy, closed without a cancel', viaProxy, false, 1);
    await trial('3 clients on one range, through the proxy', viaProxy, true, 3);
  } finally {
    writer.close();
    proxy.kill();
    await etcd.stop();
  }
  return formatTable(['step', 'before', 'watching', 'cancelled', 'client closed', 'after an event'], rows);
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    process.stdout.write(`etcd's watcher count (etcd_debugging_mvcc_watcher_total)\n${await runGrpcProxyWatchers()}\n`);
  });
}
