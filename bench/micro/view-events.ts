// What one view event costs an agent (issue 46; docs/scale.md): the etcd store's watch listener fed
// the catalog events a join wave and check flips produce, as a client agent receives them, with K
// blocking watchers parked on catalog queries (each re-parks when woken, as a client's next
// blocking query would). The events are recorded first from the agent's own write path: client
// agents' anti-entropy (ForwardedNodeSync) sends the register requests a server's Catalog runs on an
// etcd store, whose transactions an in-process etcd (MemoryEtcd below) applies and answers with one
// watch response per transaction (one revision: a service's registration is its service, check,
// by-name and two index rows, and table markers where it deletes), exactly the events etcd would send. Then each round opens
// a fresh client store on a connection that serves an empty view and replays the responses, one
// macrotask each, as gRPC data callbacks arrive; CPU time per event is the round's process CPU over
// its events (the median round is reported).
// Run: node dist/bench/micro/view-events.js [--nodes 100] [--services 10] [--flips 2000] [--watchers 100] [--rounds 5]
// Instructions (callgrind; a major GC or a compilation lands in some batches, so read the median
// and the range, bench/HISTORY.md#view-events):
//   node dist/bench/micro/view-events.js --instructions [--label before]
// runs one warm-up round then one measured round of itself under
// `valgrind --tool=callgrind --dump-before='*GetLoadAvg*'` (loadavg() marks the cuts) and prints
// instructions per event and per write of the join wave and of the flips, median of 5 batches each.
// Another build: SVC_VIEW_EVENTS=/other/dist/bench/micro/view-events.js.
// Through a real etcd (the whole per-event cost: gRPC, protobuf, etcd3, then the store):
//   node dist/bench/micro/view-events.js --etcd [--stores 4] [--reader-prof .bench-out/rprof]
// A profile: node --cpu-prof --cpu-prof-dir=.bench-out/prof dist/bench/micro/view-events.js --rounds 20
import { execFile, fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { ACLS_DISABLED_IDENTITY } from '../../src/acl/resolver.js';
import { READ_THROUGH_TABLES, TABLE_SCHEMAS } from '../../src/agent/tables.js';
import { Catalog } from '../../src/catalog/catalog.js';
import { ForwardedNodeSync } from '../../src/catalog/forwarded-sync.js';
import {
  CATALOG_INDEX,
  CATALOG_SERVICES,
  nodeIndexKey,
  SERF_ALIVE_OUTPUT,
  serviceIndexKey,
} from '../../src/catalog/model.js';
import type { NodeSync } from '../../src/catalog/sync.js';
import { silentLogger } from '../../src/core/log.js';
import { startEtcdCluster } from '../../test/support/etcd.js';
import {
  connectEtcd,
  openEtcdStore,
  type EtcdConnection,
  type EtcdStore,
  type EtcdTxn,
  type EtcdTxnResult,
  type EtcdWatchListener,
} from '../../src/state/etcd/index.js';
import type { WatchTarget } from '../../src/state/types.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { BENCH_OUT } from '../support/paths.js';
import { formatTable, writeJson } from '../support/report.js';
import { median } from '../support/stats.js';

const run = promisify(execFile);
const PREFIX = '/svc-bench/';
const DATACENTER = 'dc1';

type WatchEvent = Parameters<EtcdWatchListener['events']>[0][number];

/** One watch response: the events of one transaction, at its revision. */
interface Response {
  readonly events: readonly WatchEvent[];
  readonly revision: number;
}

interface Stored {
  readonly value: Buffer;
  readonly createRevision: number;
  readonly modRevision: number;
}

/**
 * An etcd in this process, enough for one store's commits: compares, puts and deletes applied at
 * one new revision each, and the events of each sent to every watcher on a later turn, as etcd sends them.
 */
class MemoryEtcd {
  private readonly keys = new Map<string, Stored>();
  private readonly listeners = new Set<EtcdWatchListener>();
  revision = 1;
  readonly responses: Response[] = [];

  connection(): EtcdConnection {
    return {
      rangeKeys: () => Promise.resolve({ revision: this.revision, kvs: [] }),
      watchRange: (_start: Buffer, _end: Buffer, _from: number, listener: EtcdWatchListener) => {
        this.listeners.add(listener);
        setImmediate(() => listener.connected());
        return { cancel: () => this.listeners.delete(listener) };
      },
      txn: (txn: EtcdTxn) => Promise.resolve(this.apply(txn)),
      close: () => {},
    } as unknown as EtcdConnection;
  }

  private apply(txn: EtcdTxn): EtcdTxnResult {
    const holds = txn.compares.every((c) => {
      const kv = this.keys.get(c.key.toString());
      const at = kv === undefined ? 0 : c.target === 'create' ? kv.createRevision : kv.modRevision;
      return at === c.equals;
    });
    const revision = ++this.revision;
    const events: WatchEvent[] = [];
    for (const op of holds ? txn.success : txn.failure) {
      if (op.op === 'put') {
        const key = op.key.toString();
        const kv = {
          value: op.value,
          createRevision: this.keys.get(key)?.createRevision ?? revision,
          modRevision: revision,
        };
        this.keys.set(key, kv);
        events.push({ type: 'put', kv: { key, ...kv, lease: op.lease ?? '0' } });
        continue;
      }
      const from = op.key.toString();
      const end = op.end?.toString();
      for (const key of [...this.keys.keys()]) {
        if (end === undefined ? key !== from : key < from || key >= end) continue;
        this.keys.delete(key);
        events.push({
          type: 'delete',
          kv: { key, value: Buffer.alloc(0), createRevision: 0, modRevision: revision, lease: '0' },
        });
      }
    }
    const response = { events, revision };
    this.responses.push(response);
    setImmediate(() => {
      for (const listener of this.listeners) listener.events(response.events, response.revision);
    });
    return { succeeded: holds, revision };
  }
}

export interface Workload {
  readonly nodes: number;
  readonly services: number;
  readonly flips: number;
}

/** What a node's agent holds: `services` services, each with a passing TTL check, as bench/scale/instance.ts registers. */
function desired(node: number, services: number, critical?: number): NodeSync {
  const list = Array.from({ length: services }, (_, i) => ({ ID: `svc-${i}`, Service: `svc-${i}`, Port: 20_000 + i }));
  const checks = list.map((s, i) => ({
    CheckID: `service:${s.ID}`,
    Name: `Service '${s.Service}' check`,
    Status: i === critical ? ('critical' as const) : ('passing' as const),
    Notes: '',
    Output: i === critical ? 'TTL expired' : '',
    ServiceID: s.ID,
    Type: 'ttl',
    Interval: '',
    Timeout: '',
    Definition: { TTL: '24h0m0s' },
  }));
  return {
    node: {
      ID: `00000000-0000-4000-8000-${String(node).padStart(12, '0')}`,
      Address: `10.0.${node >> 8}.${node & 255}`,
      TaggedAddresses: {},
      Meta: {},
    },
    services: list,
    checks,
  };
}

const nodeName = (n: number): string => `agent-${n}`;

/**
 * The watch responses of a join wave (each node: its registration through a server, its services
 * one request each, the server's liveness check) and then `flips` check flips, one partial sync each.
 */
export async function recordWorkload(w: Workload): Promise<{ join: Response[]; flips: Response[] }> {
  const etcd = new MemoryEtcd();
  const server = await openStore(etcd.connection());
  const catalog = new Catalog(server, DATACENTER);
  const sync = new ForwardedNodeSync(server, DATACENTER, {
    register: async (reg) => void (await catalog.register(reg, ACLS_DISABLED_IDENTITY)),
    deregister: async (dereg) => void (await catalog.deregister(dereg, ACLS_DISABLED_IDENTITY)),
  });
  for (let n = 0; n < w.nodes; n++) {
    await sync.syncNode(nodeName(n), desired(n, w.services));
    await catalog.setLiveness(nodeName(n), 'passing', SERF_ALIVE_OUTPUT);
  }
  const joined = etcd.responses.length;
  const critical = new Map<number, number>();
  for (let f = 0; f < w.flips; f++) {
    // Spread over the nodes; each flip turns one check critical, or back to passing.
    const n = (f * 7919) % w.nodes;
    const service = f % w.services;
    const flipped = critical.get(n) === service ? undefined : service;
    if (flipped === undefined) critical.delete(n);
    else critical.set(n, flipped);
    const checkId = `service:svc-${service}`;
    await sync.syncNode(nodeName(n), desired(n, w.services, flipped), {
      services: new Set(),
      checks: new Set([checkId]),
    });
  }
  await server.close();
  return { join: etcd.responses.slice(0, joined), flips: etcd.responses.slice(joined) };
}

function openStore(connection: EtcdConnection | readonly string[]): Promise<EtcdStore> {
  return openEtcdStore({
    etcd: Array.isArray(connection) ? { endpoints: [...connection] } : { shared: connection as EtcdConnection },
    prefix: PREFIX,
    log: silentLogger,
    readThroughTables: READ_THROUGH_TABLES,
    tableSchemas: TABLE_SCHEMAS,
  });
}

/** A client agent's store, fed by hand: its watch listener is what the bench calls. */
async function clientStore(): Promise<{ store: EtcdStore; feed: EtcdWatchListener }> {
  let feed: EtcdWatchListener | undefined;
  const connection = {
    rangeKeys: () => Promise.resolve({ revision: 1, kvs: [] }),
    watchRange: (_start: Buffer, _end: Buffer, _from: number, listener: EtcdWatchListener) => {
      feed = listener;
      return { cancel: () => {} };
    },
    close: () => {},
  } as unknown as EtcdConnection;
  const store = await openStore(connection);
  if (feed === undefined) throw new Error('the store opened no view watch');
  return { store, feed };
}

/** The k-th parked query: most a service's health (its index row), some a node's services, some the service list. */
function watchTarget(k: number, w: Workload): WatchTarget {
  if (k % 10 === 9) return { table: CATALOG_SERVICES };
  if (k % 10 === 8) return { table: CATALOG_INDEX, key: nodeIndexKey(nodeName(k % w.nodes)) };
  return { table: CATALOG_INDEX, key: serviceIndexKey(`svc-${k % w.services}`) };
}

/** Parks `count` watchers that each park again when woken; returns the wake-up count so far and a stop. */
function parkWatchers(store: EtcdStore, count: number, w: Workload): { wakes: () => number; stop: () => void } {
  let wakes = 0;
  const cancels: (() => void)[] = [];
  let stopped = false;
  for (let k = 0; k < count; k++) {
    const target = watchTarget(k, w);
    const park = (): void => {
      if (stopped) return;
      cancels[k] = store.watchOnce(target, () => {
        wakes++;
        park();
      });
    };
    park();
  }
  return {
    wakes: () => wakes,
    stop: () => {
      stopped = true;
      for (const cancel of cancels) cancel();
    },
  };
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** One stretch between two cuts (callgrind's dumps): its phase, events and writes. */
interface Batch {
  readonly phase: 'join' | 'flips';
  readonly events: number;
  readonly writes: number;
}

/**
 * Feeds the responses one macrotask each, cut into `batches` stretches (a major GC lands in one of
 * them, not in every figure): `cut` after each. Resolves to the events fed.
 */
async function feed(
  listener: EtcdWatchListener,
  responses: readonly Response[],
  phase: Batch['phase'],
  cut: (batch: Batch) => void,
  batches = 1,
): Promise<number> {
  let events = 0;
  let inBatch = { events: 0, writes: 0 };
  const size = Math.ceil(responses.length / batches);
  for (const r of responses) {
    listener.events(r.events, r.revision);
    events += r.events.length;
    inBatch = { events: inBatch.events + r.events.length, writes: inBatch.writes + 1 };
    await nextTurn();
    if (inBatch.writes === size) {
      cut({ phase, ...inBatch });
      inBatch = { events: 0, writes: 0 };
    }
  }
  if (inBatch.writes > 0) cut({ phase, ...inBatch });
  return events;
}

interface RoundResult {
  readonly joinEvents: number;
  readonly flipEvents: number;
  /** CPU µs per event of each phase. */
  readonly joinUs: number;
  readonly flipUs: number;
  readonly wakes: number;
}

function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** One fresh client view fed the join wave, then the flips; `cut` marks callgrind's dumps, in `batches` per phase. */
async function round(
  recorded: { join: Response[]; flips: Response[] },
  w: Workload,
  watchers: number,
  cut?: { readonly start: () => void; readonly batch: (batch: Batch) => void; readonly batches: number },
): Promise<RoundResult> {
  const { store, feed: listener } = await clientStore();
  const parked = parkWatchers(store, watchers, w);
  await nextTurn();
  const batch = cut?.batch ?? (() => {});
  cut?.start();
  let t = cpuUs();
  const joinEvents = await feed(listener, recorded.join, 'join', batch, cut?.batches);
  const joinCpu = cpuUs() - t;
  t = cpuUs();
  const flipEvents = await feed(listener, recorded.flips, 'flips', batch, cut?.batches);
  const flipCpu = cpuUs() - t;
  const wakes = parked.wakes();
  parked.stop();
  const last = recorded.flips.at(-1) ?? recorded.join.at(-1);
  if (last !== undefined && store.index !== last.revision)
    throw new Error(`the view stopped at ${store.index}, not ${last.revision}`);
  await store.close();
  return {
    joinEvents,
    flipEvents,
    joinUs: joinCpu / joinEvents,
    flipUs: flipEvents === 0 ? 0 : flipCpu / flipEvents,
    wakes,
  };
}

interface Settings extends Workload {
  readonly watchers: number;
  readonly rounds: number;
}

function settingsOf(values: Record<string, string | boolean | undefined>): Settings {
  const num = (name: string, fallback: number): number => {
    const v = values[name];
    return typeof v === 'string' ? Number(v) : fallback;
  };
  return {
    nodes: num('nodes', 100),
    services: num('services', 10),
    flips: num('flips', 2_000),
    watchers: num('watchers', 100),
    rounds: num('rounds', 5),
  };
}

const OPTIONS = {
  etcd: { type: 'boolean' },
  reader: { type: 'string' },
  stores: { type: 'string', default: '4' },
  'reader-prof': { type: 'string' },
  nodes: { type: 'string' },
  services: { type: 'string' },
  flips: { type: 'string' },
  watchers: { type: 'string' },
  rounds: { type: 'string' },
  instructions: { type: 'boolean' },
  inner: { type: 'boolean' },
  label: { type: 'string', default: 'this' },
} as const;

/** CPU time per event, `rounds` rounds after one warm-up. */
export async function runViewEventsMicro(s: Settings): Promise<RoundResult[]> {
  const recorded = await recordWorkload(s);
  await round(recorded, s, s.watchers);
  const results: RoundResult[] = [];
  for (let r = 0; r < s.rounds; r++) results.push(await round(recorded, s, s.watchers));
  return results;
}

/** Batches per phase of the measured round under callgrind: the median batch is the figure. */
const BATCHES = 5;

/**
 * Under callgrind: a warm-up round, then a round cut by loadavg() at its start and after each
 * batch. A major GC or a compilation lands in some batches and adds up to a few times a batch's
 * count to it (forcing a collection between batches made every batch dearer: what V8 keeps warm
 * goes with it), so the figure is the median batch, with the range beside it.
 */
async function innerInstructions(s: Settings): Promise<void> {
  const recorded = await recordWorkload(s);
  await round(recorded, s, s.watchers);
  const batches: Batch[] = [];
  const cut = (): void => void loadavg();
  await round(recorded, s, s.watchers, {
    start: cut,
    batch: (b) => {
      cut();
      batches.push(b);
    },
    batches: BATCHES,
  });
  process.stdout.write(`${JSON.stringify(batches)}\n`);
}

async function dumpTotal(file: string): Promise<number> {
  const text = await readFile(file, 'utf8');
  const m = /^(?:totals|summary): (\d+)/m.exec(text);
  if (m?.[1] === undefined) throw new Error(`${file}: no totals line`);
  return Number(m[1]);
}

/** Runs this file (or SVC_VIEW_EVENTS) under callgrind; the dumps between the cuts are the phases. */
async function instructions(
  s: Settings,
  label: string,
): Promise<{ join: PhaseInstructions; flips: PhaseInstructions }> {
  const dir = join(BENCH_OUT, 'callgrind', `view-events-${label}`);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const script = process.env.SVC_VIEW_EVENTS ?? fileURLToPath(import.meta.url);
  const args = ['--nodes', s.nodes, '--services', s.services, '--flips', s.flips, '--watchers', s.watchers].map(String);
  const { stdout } = await run(
    'valgrind',
    [
      '--tool=callgrind',
      '--dump-before=*GetLoadAvg*',
      `--callgrind-out-file=${join(dir, 'cg.out')}`,
      process.execPath,
      script,
      '--inner',
      ...args,
    ],
    { maxBuffer: 16 << 20, timeout: 3_600_000 },
  );
  const batches = JSON.parse(stdout.trim().split('\n').at(-1) ?? '[]') as Batch[];
  // cg.out.1 ends at the first cut (start-up, recording, the warm-up round); each later one is a batch.
  const dumps = (await readdir(dir)).filter((f) => /^cg\.out\.\d+$/.test(f));
  dumps.sort((a, b) => Number(a.split('.').at(-1)) - Number(b.split('.').at(-1)));
  if (dumps.length < batches.length + 1)
    throw new Error(`expected ${batches.length + 1} dumps in ${dir}: ${dumps.join(', ')}`);
  const measured = await Promise.all(
    batches.map(async (b, i) => ({ ...b, ir: await dumpTotal(join(dir, dumps[i + 1] as string)) })),
  );
  const of = (phase: Batch['phase']): PhaseInstructions => {
    const mine = measured.filter((b) => b.phase === phase);
    const perEvent = mine.map((b) => b.ir / b.events);
    const perWrite = mine.map((b) => b.ir / b.writes);
    return {
      events: mine.reduce((n, b) => n + b.events, 0),
      writes: mine.reduce((n, b) => n + b.writes, 0),
      irPerEvent: Math.round(median(perEvent)),
      irPerWrite: Math.round(median(perWrite)),
      irPerWriteRange: [Math.round(Math.min(...perWrite)), Math.round(Math.max(...perWrite))],
    };
  };
  return { join: of('join'), flips: of('flips') };
}

interface PhaseInstructions {
  readonly events: number;
  readonly writes: number;
  /** Medians over the phase's batches. */
  readonly irPerEvent: number;
  readonly irPerWrite: number;
  readonly irPerWriteRange: readonly [number, number];
}

/** What the parent tells a reader process, and what it answers. */
type ToReader = { readonly go: number } | { readonly idle: number } | { readonly exit: true };
type FromReader = { readonly ready: true } | { readonly cpuUs: number; readonly events: number };

/**
 * The same events through a real etcd: `stores` client stores in a child process, each on its own
 * etcd connection with `watchers` parked watchers, while this process writes the recorded
 * transactions into etcd. The child's CPU from the first write until every store's view holds the
 * last, over the events its stores received: the whole per-event cost of an agent's view (gRPC,
 * HTTP/2 and protobuf decoding in etcd3, then the store), less its idle floor.
 */
async function throughEtcd(s: Settings, stores: number, profileDir?: string): Promise<Record<string, number>> {
  const recorded = await recordWorkload(s);
  const cluster = await startEtcdCluster({ size: 1 });
  const raw = connectEtcd({ endpoints: cluster.endpoints });
  try {
    const execArgv = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`];
    const reader = fork(
      fileURLToPath(import.meta.url),
      [
        '--reader',
        cluster.endpoints.join(','),
        '--stores',
        String(stores),
        '--watchers',
        String(s.watchers),
        '--nodes',
        String(s.nodes),
        '--services',
        String(s.services),
      ],
      {
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
        execArgv,
      },
    );
    const next = async (): Promise<FromReader> => ((await once(reader, 'message')) as [FromReader])[0];
    await next();
    const ask = async (msg: ToReader): Promise<{ cpuUs: number; events: number }> => {
      reader.send(msg);
      return (await next()) as { cpuUs: number; events: number };
    };
    const idle = await ask({ idle: 1_000 });
    const write = async (responses: readonly Response[]): Promise<{ cpuUs: number; events: number }> => {
      const done = ask({ go: 0 });
      let last = 0;
      for (const r of responses) {
        const success = r.events.map((e) =>
          e.type === 'put'
            ? { op: 'put' as const, key: Buffer.from(e.kv.key), value: e.kv.value }
            : { op: 'delete' as const, key: Buffer.from(e.kv.key) },
        );
        last = (await raw.txn({ compares: [], success, failure: [] }, 10_000)).revision;
      }
      reader.send({ go: last });
      return done;
    };
    const join = await write(recorded.join);
    const flips = await write(recorded.flips);
    reader.send({ exit: true });
    await once(reader, 'exit');
    const idleUsPerMs = idle.cpuUs / 1_000;
    return {
      stores,
      idleCpuUsPerSecond: Math.round(idleUsPerMs * 1_000),
      joinEvents: join.events,
      joinUsPerEvent: join.cpuUs / join.events,
      flipEvents: flips.events,
      flipUsPerEvent: flips.cpuUs / flips.events,
    };
  } finally {
    raw.close();
    await cluster.stop();
  }
}

/** The child of throughEtcd: opens the stores, then measures each phase it is told of. */
async function reader(endpoints: readonly string[], stores: number, s: Settings): Promise<void> {
  const open: EtcdStore[] = [];
  for (let i = 0; i < stores; i++) {
    const store = await openStore(endpoints);
    parkWatchers(store, s.watchers, s);
    open.push(store);
  }
  const send = (msg: FromReader): void => void process.send?.(msg);
  /** The phase under way: its CPU and view event counts at its start, and the revision that ends it (0: not told yet). */
  let phase: { readonly cpu: number; readonly counted: readonly number[]; until: number } | undefined;
  const check = (): void => {
    if (phase === undefined || phase.until === 0) return;
    const until = phase.until;
    if (open.some((st) => st.index < until)) return;
    let events = 0;
    open.forEach((st, i) => (events += st.stats.viewEvents - (phase?.counted[i] ?? 0)));
    const used = cpuUs() - phase.cpu;
    phase = undefined;
    send({ cpuUs: used, events });
  };
  process.on('message', (msg: ToReader) => {
    if ('exit' in msg) process.exit(0);
    if ('idle' in msg) {
      const t = cpuUs();
      setTimeout(() => send({ cpuUs: cpuUs() - t, events: 0 }), msg.idle);
      return;
    }
    // The first `go` starts a phase (before the first write); the second names its last revision.
    if (phase === undefined) {
      phase = { cpu: cpuUs(), counted: open.map((st) => st.stats.viewEvents), until: 0 };
      return;
    }
    phase.until = msg.go;
    check();
  });
  setInterval(check, 5).unref();
  send({ ready: true });
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    const { values } = parseArgs({ options: OPTIONS });
    const s = settingsOf(values);
    if (values.inner === true) return innerInstructions(s);
    if (values.reader !== undefined) {
      await reader(values.reader.split(','), Number(values.stores), s);
      return new Promise<void>(() => {}); // killed by the parent
    }
    if (values.etcd === true) {
      const r = await throughEtcd(s, Number(values.stores), values['reader-prof']);
      process.stdout.write(`${JSON.stringify(r, null, 1)}\n`);
      return;
    }
    const shape = `${s.nodes} nodes x ${s.services} services, ${s.flips} flips, ${s.watchers} parked watchers`;
    if (values.instructions === true) {
      const r = await instructions(s, values.label);
      process.stdout.write(`instructions per view event (${shape}; callgrind, median of ${BATCHES} batches)\n`);
      const line = (name: string, p: PhaseInstructions): (string | number)[] => [
        name,
        p.events,
        p.writes,
        p.irPerEvent,
        p.irPerWrite,
        `${p.irPerWriteRange[0]}..${p.irPerWriteRange[1]}`,
      ];
      process.stdout.write(
        `${formatTable(
          ['phase', 'events', 'writes', 'Ir/event', 'Ir/write', 'Ir/write range'],
          [line('join wave', r.join), line('check flips', r.flips)],
        )}\n`,
      );
      process.stdout.write(`wrote ${await writeJson(`view-events-instructions-${values.label}`, { ...s, ...r })}\n`);
      return;
    }
    const results = await runViewEventsMicro(s);
    const row = (name: string, us: (r: RoundResult) => number, events: number): (string | number)[] => [
      name,
      events,
      median(results.map(us)).toFixed(2),
      Math.min(...results.map(us)).toFixed(2),
      Math.max(...results.map(us)).toFixed(2),
    ];
    const first = results[0] as RoundResult;
    process.stdout.write(`CPU per view event (${shape}; ${s.rounds} rounds)\n`);
    process.stdout.write(
      `${formatTable(
        ['phase', 'events', 'µs/event median', 'min', 'max'],
        [row('join wave', (r) => r.joinUs, first.joinEvents), row('check flips', (r) => r.flipUs, first.flipEvents)],
      )}\n`,
    );
    process.stdout.write(`watchers woken per round: ${first.wakes}\n`);
    process.stdout.write(`wrote ${await writeJson(`view-events-${values.label}`, { ...s, rounds: results })}\n`);
  });
}
