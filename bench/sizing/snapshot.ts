// Issue 44's snapshot figures (docs/decisions.md#snapshots): save and restore of 100,000 KV rows and
// 10,000 intentions, on the embedded store (a data directory: the restore is one WAL commit) and
// on the etcd store (one etcd member, KV read through: the restore goes in steps of at most
// --max-txn-ops). Below HTTP, in this process: src/snapshot/snapshots.ts over each store, as the
// agent runs it. For each: seconds, this process's CPU seconds (user + system: etcd's own work is
// not in them, and a noisy host moves them less than the wall clock), the archive's size, and this
// process's RSS: the peak sampled
// every 10 ms during the step (synchronous work such as gzip can hide a peak between samples) and
// the process's lifetime peak after it (getrusage maxrss).
// Run: node dist/bench/sizing/snapshot.js [--kv 100000] [--intentions 10000] [--only embedded,etcd]
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startEtcdCluster } from '../../test/support/etcd.js';
import { READ_THROUGH_TABLES, TABLE_SCHEMAS } from '../../src/agent/tables.js';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/log.js';
import { INTENTIONS_TABLE, intentionKey, type StoredIntention } from '../../src/connect/intentions/model.js';
import { KV_TABLE } from '../../src/kv/entries.js';
import { Snapshots } from '../../src/snapshot/snapshots.js';
import { openEmbeddedStore } from '../../src/state/embedded/index.js';
import { openEtcdStore } from '../../src/state/etcd/index.js';
import type { StateStore, StoreSnapshots, WriteOp } from '../../src/state/types.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { formatTable, round, writeJson } from '../support/report.js';

/** Rows per fill commit: within etcd's default --max-txn-ops (128) with the table marker. */
const FILL_BATCH = 100;
/** Fill commits in flight at once (the etcd store sends up to 64 together). */
const FILL_IN_FLIGHT = 16;
const RSS_SAMPLE_MS = 10;

interface Figures {
  readonly backend: string;
  readonly step: string;
  readonly seconds: number;
  readonly cpuSeconds: number;
  readonly archiveBytes: number;
  readonly sampledPeakRssMb: number;
  readonly lifetimePeakRssMb: number;
}

function intention(i: number): StoredIntention {
  return {
    Description: '',
    SourceNS: 'default',
    SourceName: `src-${i}`,
    DestinationNS: 'default',
    DestinationName: `dst-${i % 100}`,
    SourceType: 'consul',
    Action: i % 2 === 0 ? 'allow' : 'deny',
    Precedence: 9,
  };
}

async function fill(store: StateStore, kvRows: number, intentions: number): Promise<void> {
  const ops: WriteOp[] = [];
  for (let i = 0; i < kvRows; i++) {
    const value = { Flags: 0, Value: Buffer.from(`value-${i}-${'x'.repeat(40)}`).toString('base64') };
    ops.push({ op: 'set', table: KV_TABLE, key: `app/${i % 100}/key-${i}`, value });
  }
  for (let i = 0; i < intentions; i++) {
    const v = intention(i);
    ops.push({
      op: 'set',
      table: INTENTIONS_TABLE,
      key: intentionKey('default', v.DestinationName, 'default', v.SourceName),
      value: v,
    });
  }
  const batches: WriteOp[][] = [];
  for (let i = 0; i < ops.length; i += FILL_BATCH) batches.push(ops.slice(i, i + FILL_BATCH));
  for (let i = 0; i < batches.length; i += FILL_IN_FLIGHT)
    await Promise.all(batches.slice(i, i + FILL_IN_FLIGHT).map((b) => store.commit(b)));
}

async function measured<T>(
  run: () => Promise<T>,
): Promise<{ value: T; seconds: number; cpuSeconds: number; peakMb: number; lifetimeMb: number }> {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, RSS_SAMPLE_MS);
  const start = process.hrtime.bigint();
  const cpu = process.cpuUsage();
  try {
    const value = await run();
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    const used = process.cpuUsage(cpu);
    peak = Math.max(peak, process.memoryUsage.rss());
    return {
      value,
      seconds,
      cpuSeconds: (used.user + used.system) / 1e6,
      peakMb: peak / 2 ** 20,
      lifetimeMb: process.resourceUsage().maxRSS / 1024,
    };
  } finally {
    clearInterval(timer);
  }
}

async function benchStore(
  backend: string,
  store: StateStore & StoreSnapshots,
  kvRows: number,
  intentions: number,
): Promise<Figures[]> {
  await fill(store, kvRows, intentions);
  const snapshots = new Snapshots({
    store,
    datacenter: 'dc1',
    agentVersion: 'bench',
    schemas: TABLE_SCHEMAS,
    clock: systemClock,
    leases: () => undefined,
    log: silentLogger,
  });
  const save = await measured(() => snapshots.save());
  // Something to undo: a tenth of the KV rows changed.
  const changes: WriteOp[] = [];
  for (let i = 0; i < kvRows / 10; i++)
    changes.push({ op: 'set', table: KV_TABLE, key: `app/${i % 100}/key-${i}`, value: { Flags: 1, Value: null } });
  for (let i = 0; i < changes.length; i += FILL_BATCH) await store.commit(changes.slice(i, i + FILL_BATCH));
  const restore = await measured(() => snapshots.restore(save.value.archive));
  const size = save.value.archive.length;
  return [
    {
      backend,
      step: 'save',
      seconds: save.seconds,
      cpuSeconds: save.cpuSeconds,
      archiveBytes: size,
      sampledPeakRssMb: save.peakMb,
      lifetimePeakRssMb: save.lifetimeMb,
    },
    {
      backend,
      step: 'restore',
      seconds: restore.seconds,
      cpuSeconds: restore.cpuSeconds,
      archiveBytes: size,
      sampledPeakRssMb: restore.peakMb,
      lifetimePeakRssMb: restore.lifetimeMb,
    },
  ];
}

export async function runSnapshotBench(argv: readonly string[] = []): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: { kv: { type: 'string' }, intentions: { type: 'string' }, only: { type: 'string' } },
  });
  const kvRows = Number(values.kv ?? 100_000);
  const intentions = Number(values.intentions ?? 10_000);
  const only = new Set((values.only ?? 'embedded,etcd').split(','));
  const rows: Figures[] = [];
  if (only.has('embedded')) {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-bench-snapshot-'));
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    try {
      rows.push(...(await benchStore('embedded', store, kvRows, intentions)));
    } finally {
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    }
  }
  if (only.has('etcd')) {
    const etcd = await startEtcdCluster({ size: 1 });
    const store = await openEtcdStore({
      etcd: { endpoints: etcd.endpoints },
      prefix: '/svc-bench-snapshot/',
      log: silentLogger,
      readThroughTables: READ_THROUGH_TABLES,
      tableSchemas: TABLE_SCHEMAS,
    });
    try {
      rows.push(...(await benchStore('etcd', store, kvRows, intentions)));
    } finally {
      await store.close();
      await etcd.stop();
    }
  }
  process.stdout.write(
    `snapshot save and restore: ${kvRows} KV rows, ${intentions} intentions\n${formatTable(
      ['backend', 'step', 'seconds', 'CPU seconds', 'archive MB', 'peak RSS MB (sampled)', 'peak RSS MB (process)'],
      rows.map((r) => [
        r.backend,
        r.step,
        round(r.seconds),
        round(r.cpuSeconds),
        round(r.archiveBytes / 2 ** 20),
        round(r.sampledPeakRssMb),
        round(r.lifetimePeakRssMb),
      ]),
    )}\n`,
  );
  const path = await writeJson('snapshot', { kvRows, intentions, rows });
  process.stdout.write(`wrote ${path}\n`);
}

if (isEntryPoint(import.meta.url)) runMain(() => runSnapshotBench(process.argv.slice(2)));
