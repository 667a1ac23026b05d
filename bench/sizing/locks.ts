// Issue 43's speed figures, on one etcd member (tmpfs) with two server agents (a, b) and a client
// agent (c) of one mesh, each against a baseline of the same run (docs/benchmarks.md):
// - locks: a KV lock's acquire + release round trip (`?acquire=<session>` then `?release=`, one
//   after the other) through c and through a, against a bare etcd3 client doing the same with a
//   lease and two transactions (acquire: create_revision == 0, then put under the lease; release:
//   value == the holder, then delete); sides rotated round by round, the figure the median of the
//   rounds' medians, p99 over every round trip, each side's ratio to etcd's median, and the CPU
//   the agents and etcd spent per round trip above their idle floor;
// - events: N events fired one after another through a, b, c in turn, each agent followed by a
//   blocking `/v1/event/list` loop (as `consul watch -type event` follows one): from a fire's
//   sending until every follower has it, and until each has;
// - renewals: K loops renewing S TTL sessions through a, then through c (forwarded), for D seconds:
//   renewals/s, latency, failures, and every process's CPU per renewal from /proc, net of the same
//   processes' idle floor measured just before (rates swing on this 2-core machine; CPU holds).
// Run: node dist/bench/sizing/locks.js [--locks 200] [--rounds 4] [--events 300] [--sessions 200]
//   [--loops 16] [--duration 10] [--only locks,events,renewals] [--quiet-wait 5]
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { Etcd3 } from 'etcd3';
import { startEtcdCluster } from '../../test/support/etcd.js';
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import type { ServerProcess } from '../support/child.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { LOOPBACK } from '../support/ports.js';
import {
  readMachineBusySeconds,
  readMainThreadSched,
  readSelfAndReapedCpuSeconds,
  readThreadGroupsCpu,
} from '../support/proc-stats.js';
import { waitForQuiet } from '../support/quiet.js';
import { formatTable, round, writeJson } from '../support/report.js';
import { median, quantileSorted } from '../support/stats.js';

/** Outlives the locks part without a renew, so none lands among the round trips; acquire never reads the TTL. */
const LOCK_SESSION_TTL_S = 600;
/** Round trips per side before anything is measured: JIT, etcd connections, the mailbox watches. */
const LOCK_WARMUP = 50;
/** The renewed sessions' TTL (`consul lock` uses 15 s); what a renewal costs does not depend on it. */
const RENEW_TTL = '30s';
/** Unmeasured seconds of renewals before each row. */
const RENEW_WARMUP_S = 2;
/** Seconds with nothing asked of anyone, read as each process's CPU floor. */
const IDLE_WINDOW_S = 3;
/** Sessions created at once: enough to hide the round trip, few enough not to queue. */
const CREATE_IN_FLIGHT = 16;
/** Events fired (and waited for on every agent) before the measured ones. */
const EVENT_WARMUP = 30;
/** The longest a fired event may take to reach every follower before it counts as missing. */
const EVENT_DEADLINE_MS = 30_000;

interface LocksArgs {
  locks: number;
  rounds: number;
  events: number;
  sessions: number;
  loops: number;
  durationS: number;
  quietWaitS: number;
  only: ReadonlySet<string>;
}

function count(name: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} wants a positive integer, got ${text}`);
  return n;
}

function parseLocksArgs(argv: readonly string[]): LocksArgs {
  const names = ['locks', 'rounds', 'events', 'sessions', 'loops', 'duration', 'quiet-wait', 'only'] as const;
  const { values } = parseArgs({
    args: [...argv],
    options: Object.fromEntries(names.map((n) => [n, { type: 'string' as const }])),
    strict: true,
  });
  const text = (name: string): string | undefined => values[name] as string | undefined;
  const only = new Set((text('only') ?? 'locks,events,renewals').split(','));
  for (const part of only) {
    if (!['locks', 'events', 'renewals'].includes(part)) throw new Error(`--only: unknown part ${part}`);
  }
  return {
    locks: count('locks', text('locks'), 200),
    rounds: count('rounds', text('rounds'), 4),
    events: count('events', text('events'), 300),
    sessions: count('sessions', text('sessions'), 200),
    loops: count('loops', text('loops'), 16),
    durationS: count('duration', text('duration'), 10),
    quietWaitS: text('quiet-wait') === '0' ? 0 : count('quiet-wait', text('quiet-wait'), 5),
    only,
  };
}

interface Agents {
  readonly a: ServerProcess;
  readonly b: ServerProcess;
  readonly c: ServerProcess;
}

function agentUrl(agent: ServerProcess, path: string): string {
  return `http://${LOOPBACK}:${agent.port}${path}`;
}

/** PUTs and returns the answer's status and text; a refused connection or timeout is status 0. */
async function put(agent: ServerProcess, path: string, body?: string): Promise<{ status: number; text: string }> {
  try {
    const res = await fetch(agentUrl(agent, path), {
      method: 'PUT',
      body: body ?? null,
      signal: AbortSignal.timeout(10_000),
    });
    return { status: res.status, text: await res.text() };
  } catch (err) {
    return { status: 0, text: err instanceof Error ? err.message : String(err) };
  }
}

async function createSession(agent: ServerProcess, ttl: string): Promise<string> {
  const res = await put(agent, '/v1/session/create', JSON.stringify({ TTL: ttl }));
  if (res.status !== 200) throw new Error(`session create on ${agent.name}: ${res.status} ${res.text.slice(0, 200)}`);
  return (JSON.parse(res.text) as { ID: string }).ID;
}

// ---------------------------------------------------------------------------------------------
// Locks

/** One lock's two calls, each true when it took (or gave back) the lock. */
interface Lock {
  acquire(): Promise<boolean>;
  release(): Promise<boolean>;
}

function agentLock(agent: ServerProcess, key: string, session: string): Lock {
  const call = async (verb: 'acquire' | 'release'): Promise<boolean> => {
    const res = await put(agent, `/v1/kv/${key}?${verb}=${session}`, session);
    return res.status === 200 && res.text.trim() === 'true';
  };
  return { acquire: () => call('acquire'), release: () => call('release') };
}

/** The same lock as a bare etcd3 client takes it: one lease, a transaction each way. */
function etcdLock(client: Etcd3, key: string, lease: string, holder: string): Lock {
  return {
    acquire: async () =>
      (await client.if(key, 'Create', '==', 0).then(client.put(key).value(holder).lease(lease)).commit()).succeeded,
    release: async () =>
      (await client.if(key, 'Value', '==', holder).then(client.delete().key(key)).commit()).succeeded,
  };
}

interface LockRound {
  /** Acquire + release, acquire, release: ms each, one entry per round trip. */
  readonly trip: number[];
  readonly acquire: number[];
  readonly release: number[];
  failed: number;
  /** What the agents, etcd and this bench used over the round (undefined in the warm-up). */
  cpu?: Conditions;
}

async function lockRound(lock: Lock, trips: number, pids?: Pids): Promise<LockRound> {
  const out: LockRound = { trip: [], acquire: [], release: [], failed: 0 };
  const watch = pids === undefined ? undefined : startWatch(pids);
  for (let i = 0; i < trips; i++) {
    const t0 = performance.now();
    const took = await lock.acquire();
    const t1 = performance.now();
    const gave = await lock.release();
    const t2 = performance.now();
    if (!took || !gave) out.failed++;
    out.trip.push(t2 - t0);
    out.acquire.push(t1 - t0);
    out.release.push(t2 - t1);
  }
  if (watch !== undefined) out.cpu = watch();
  return out;
}

const LOCK_SIDES = ['etcd', 'server', 'client'] as const;
type LockSide = (typeof LOCK_SIDES)[number];

async function lockRows(
  agents: Agents,
  endpoints: string[],
  pids: Pids,
  args: LocksArgs,
): Promise<Record<string, unknown>> {
  const client = new Etcd3({ hosts: endpoints });
  try {
    const lease = client.lease(LOCK_SESSION_TTL_S, { autoKeepAlive: false });
    const leaseId = await lease.grant();
    const ttl = `${LOCK_SESSION_TTL_S}s`;
    const locks: Record<LockSide, Lock> = {
      etcd: etcdLock(client, '/svc-bench-locks/bare', leaseId, `holder-${leaseId}`),
      server: agentLock(agents.a, 'bench/locks/server', await createSession(agents.a, ttl)),
      client: agentLock(agents.c, 'bench/locks/client', await createSession(agents.c, ttl)),
    };
    for (const side of LOCK_SIDES) {
      const warm = await lockRound(locks[side], LOCK_WARMUP);
      if (warm.failed > 0)
        throw new Error(`locks: ${warm.failed} of ${LOCK_WARMUP} warm-up round trips failed (${side})`);
    }
    await quiet(args);
    const idle = await idleFloor(pids);
    const byRound: Record<LockSide, LockRound>[] = [];
    const watch = startWatch(pids);
    for (let r = 0; r < args.rounds; r++) {
      // Rotate which side goes first, so none always meets a warmer (or busier) etcd.
      const order = LOCK_SIDES.map((_, i) => LOCK_SIDES[(i + r) % LOCK_SIDES.length] as LockSide);
      const results: Partial<Record<LockSide, LockRound>> = {};
      for (const side of order) results[side] = await lockRound(locks[side], args.locks, pids);
      byRound.push(results as Record<LockSide, LockRound>);
    }
    const conditions = watch();
    await lease.revoke();
    const side = (name: LockSide) => {
      const rounds = byRound.map((x) => x[name]);
      const trips = rounds.flatMap((x) => x.trip).sort((x, y) => x - y);
      return {
        medianMs: median(rounds.map((x) => median(x.trip))),
        p99Ms: quantileSorted(trips, 0.99),
        acquireMedianMs: median(rounds.map((x) => median(x.acquire))),
        releaseMedianMs: median(rounds.map((x) => median(x.release))),
        failed: rounds.reduce((n, x) => n + x.failed, 0),
        cpuUsPerTrip: perOp(
          idle,
          rounds.map((x) => x.cpu as Conditions),
          rounds.reduce((n, x) => n + x.trip.length, 0),
        ),
        roundMedians: rounds.map((x) => round(median(x.trip))),
      };
    };
    const etcd = side('etcd');
    const server = side('server');
    const viaClient = side('client');
    return {
      tripsPerRound: args.locks,
      rounds: args.rounds,
      etcd,
      server,
      client: viaClient,
      serverOverEtcd: server.medianMs / etcd.medianMs,
      clientOverEtcd: viaClient.medianMs / etcd.medianMs,
      clientOverServer: viaClient.medianMs / server.medianMs,
      idle,
      conditions,
    };
  } finally {
    client.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Events

const VIA = ['a', 'b', 'c'] as const;
type Via = (typeof VIA)[number];
/** The agent the i-th event is fired through: a, b, c in turn. */
const viaOf = (i: number): Via => VIA[i % VIA.length] as Via;

interface FiredEvent {
  readonly id: string;
  readonly via: Via;
  readonly sentAt: number;
  readonly ackMs: number;
}

/** Follows an agent's event list with blocking reads until stopped: when each event ID was first seen. */
function follow(agent: ServerProcess): { seen: Map<string, number>; ready: Promise<void>; stop: () => Promise<void> } {
  const seen = new Map<string, number>();
  const abort = new AbortController();
  let running = true;
  let readied: () => void = () => {};
  const ready = new Promise<void>((resolve) => (readied = resolve));
  const loop = (async () => {
    let index = '';
    while (running) {
      const query = index === '' ? '' : `?index=${index}&wait=5s`;
      const res = await fetch(agentUrl(agent, `/v1/event/list${query}`), { signal: abort.signal }).catch(
        () => undefined,
      );
      if (res === undefined) return;
      const at = performance.now();
      index = res.headers.get('X-Svc-Index') ?? '';
      for (const event of (await res.json()) as { ID: string }[]) if (!seen.has(event.ID)) seen.set(event.ID, at);
      readied();
    }
  })();
  return {
    seen,
    ready,
    stop: async () => {
      running = false;
      abort.abort();
      await loop;
    },
  };
}

async function fire(agents: Agents, via: Via, name: string): Promise<FiredEvent> {
  const sentAt = performance.now();
  const res = await put(agents[via], `/v1/event/fire/${name}`, name);
  const ackMs = performance.now() - sentAt;
  if (res.status !== 200) throw new Error(`event fire through ${via}: ${res.status} ${res.text.slice(0, 200)}`);
  return { id: (JSON.parse(res.text) as { ID: string }).ID, via, sentAt, ackMs };
}

/** Resolves once every follower has seen `id`, or after the deadline. */
async function seenEverywhere(followers: readonly { seen: Map<string, number> }[], id: string): Promise<void> {
  const deadline = performance.now() + EVENT_DEADLINE_MS;
  while (followers.some((f) => !f.seen.has(id)) && performance.now() < deadline) await sleep(5);
}

function spread(values: number[]): { p50Ms: number; p99Ms: number; maxMs: number; n: number } {
  const sorted = values.sort((x, y) => x - y);
  return {
    p50Ms: quantileSorted(sorted, 0.5),
    p99Ms: quantileSorted(sorted, 0.99),
    maxMs: sorted.at(-1) ?? Number.NaN,
    n: sorted.length,
  };
}

async function eventRows(agents: Agents, pids: Pids, args: LocksArgs): Promise<Record<string, unknown>> {
  const followers = VIA.map((name) => follow(agents[name]));
  try {
    await Promise.all(followers.map((f) => f.ready));
    let warm: FiredEvent | undefined;
    for (let i = 0; i < EVENT_WARMUP; i++) warm = await fire(agents, viaOf(i), `warm-${i}`);
    if (warm !== undefined) await seenEverywhere(followers, warm.id);
    const watch = startWatch(pids);
    const fired: FiredEvent[] = [];
    // One after another, each fire answered before the next, as the cluster test fires them.
    for (let i = 0; i < args.events; i++) fired.push(await fire(agents, viaOf(i), `bench-${i}`));
    await seenEverywhere(followers, (fired.at(-1) as FiredEvent).id);
    const conditions = watch();
    const receipt = (f: (typeof followers)[number], e: FiredEvent): number | undefined => {
      const at = f.seen.get(e.id);
      return at === undefined ? undefined : at - e.sentAt;
    };
    const everywhere: number[] = [];
    let missing = 0;
    for (const e of fired) {
      const each = followers.map((f) => receipt(f, e));
      if (each.some((x) => x === undefined)) missing++;
      else everywhere.push(Math.max(...(each as number[])));
    }
    const perAgent = Object.fromEntries(
      VIA.map((name, i) => {
        const got = fired.map((e) => receipt(followers[i] as (typeof followers)[number], e));
        const have = got.filter((x): x is number => x !== undefined);
        return [name, { ...spread(have), missing: got.length - have.length }];
      }),
    );
    const ack = (server: boolean) => spread(fired.filter((e) => (e.via === 'c') !== server).map((e) => e.ackMs));
    return {
      events: args.events,
      everywhere: { ...spread(everywhere), missing },
      perAgent,
      ackThroughServer: ack(true),
      ackThroughClient: ack(false),
      conditions,
    };
  } finally {
    await Promise.all(followers.map((f) => f.stop()));
  }
}

// ---------------------------------------------------------------------------------------------
// Renewals

async function createSessions(agent: ServerProcess, n: number): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next++ < n) ids.push(await createSession(agent, RENEW_TTL));
  };
  await Promise.all(Array.from({ length: CREATE_IN_FLIGHT }, worker));
  return ids;
}

interface RenewRun {
  readonly latencies: number[];
  failed: number;
  readonly samples: string[];
  readonly seconds: number;
}

/** `loops` loops renewing `ids` in turn through `agent` for `seconds`. */
async function renewFor(
  agent: ServerProcess,
  ids: readonly string[],
  loops: number,
  seconds: number,
): Promise<RenewRun> {
  const latencies: number[] = [];
  const samples: string[] = [];
  let failed = 0;
  let next = 0;
  const t0 = performance.now();
  const end = t0 + seconds * 1000;
  const loop = async (): Promise<void> => {
    while (performance.now() < end) {
      const id = ids[next++ % ids.length] as string;
      const started = performance.now();
      const res = await put(agent, `/v1/session/renew/${id}`);
      latencies.push(performance.now() - started);
      if (res.status !== 200 || !res.text.includes(id)) {
        failed++;
        if (samples.length < 3) samples.push(`${res.status} ${res.text.slice(0, 120)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: loops }, loop));
  return { latencies, failed, samples, seconds: (performance.now() - t0) / 1000 };
}

async function renewalRows(agents: Agents, pids: Pids, args: LocksArgs) {
  const viaServer = await createSessions(agents.a, args.sessions);
  const viaClient = await createSessions(agents.c, args.sessions);
  await quiet(args);
  // The floor: every process's CPU with the sessions held and nothing asked of anyone.
  const idle = await idleFloor(pids);
  const row = async (agent: ServerProcess, ids: readonly string[]) => {
    await renewFor(agent, ids, args.loops, RENEW_WARMUP_S);
    const watch = startWatch(pids);
    const run = await renewFor(agent, ids, args.loops, args.durationS);
    const cpu = watch();
    const renewals = run.latencies.length;
    const sorted = run.latencies.sort((x, y) => x - y);
    return {
      renewals,
      perSecond: renewals / run.seconds,
      p50Ms: quantileSorted(sorted, 0.5),
      p99Ms: quantileSorted(sorted, 0.99),
      failed: run.failed,
      failureSamples: run.samples,
      cpuUsPerRenewal: perOp(idle, [cpu], renewals),
      conditions: cpu,
    };
  };
  return {
    sessions: args.sessions,
    ttl: RENEW_TTL,
    loops: args.loops,
    durationS: args.durationS,
    idle,
    server: await row(agents.a, viaServer),
    client: await row(agents.c, viaClient),
  };
}

// ---------------------------------------------------------------------------------------------
// What the machine was doing

/** The processes whose CPU is read, by name: the agents a, b, c and the etcd member. */
type Pids = Record<string, number>;

/** This process's child named `comm` (the etcd member), from /proc: EtcdCluster does not say its pid. */
function childPid(comm: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (name === comm && ppid === process.pid) return Number(entry);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return undefined;
}

interface Conditions {
  readonly seconds: number;
  /** CPU ms of each watched process over the window (all its live threads, the scheduler's count). */
  readonly processMs: Record<string, number>;
  /** Of which each process's main thread (its event loop), and how long that waited runnable for a CPU. */
  readonly mainMs: Record<string, number>;
  readonly mainWaitMs: Record<string, number>;
  /** The bench process itself (its fetch loops and followers). */
  readonly selfMs: number;
  /** Everything else on the machine, as a share of one core: other jobs. */
  readonly otherPct: number;
  readonly loadBefore: number;
  readonly loadAfter: number;
}

/** Every process's CPU with nothing asked of anyone: the floor an operation's cost is taken above. */
async function idleFloor(pids: Pids): Promise<Conditions> {
  const watch = startWatch(pids);
  await sleep(IDLE_WINDOW_S * 1000);
  return watch();
}

/**
 * µs of CPU per operation of each process over `windows`, each process's idle floor over the same
 * time taken off first; `all` their sum, `bench` this process's own (its HTTP or etcd3 client), not
 * in `all`.
 */
function perOp(idle: Conditions, windows: readonly Conditions[], ops: number): Record<string, number> {
  const seconds = windows.reduce((s, w) => s + w.seconds, 0);
  const out: Record<string, number> = {};
  for (const name of Object.keys(idle.processMs)) {
    const usedMs = windows.reduce((s, w) => s + (w.processMs[name] ?? Number.NaN), 0);
    const floorMs = ((idle.processMs[name] ?? 0) / idle.seconds) * seconds;
    out[name] = ((usedMs - floorMs) * 1000) / ops;
  }
  out['all'] = Object.values(out).reduce((s, x) => s + x, 0);
  out['bench'] = (windows.reduce((s, w) => s + w.selfMs, 0) * 1000) / ops;
  return out;
}

/** A process's CPU ms so far: all threads, the main thread, and the main thread's wait for a CPU. */
function threadsMs(pid: number): { all: number; main: number; wait: number } {
  const t = readThreadGroupsCpu(pid);
  const main = readMainThreadSched(pid);
  return {
    all: t === undefined ? Number.NaN : t.mainMs + t.loweredMs + t.otherMs,
    main: main?.cpuMs ?? Number.NaN,
    wait: main?.waitMs ?? Number.NaN,
  };
}

/** Brackets a window: what each process, this bench and the rest of the machine used in it. */
function startWatch(pids: Pids): () => Conditions {
  const t0 = performance.now();
  const machine0 = readMachineBusySeconds();
  const self0 = readSelfAndReapedCpuSeconds();
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, threadsMs(pid)]));
  const loadBefore = loadavg()[0] ?? Number.NaN;
  return () => {
    const seconds = (performance.now() - t0) / 1000;
    const after = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, threadsMs(pid)]));
    const delta = (pick: 'all' | 'main' | 'wait'): Record<string, number> =>
      Object.fromEntries(
        Object.keys(pids).map((name) => [
          name,
          (after[name]?.[pick] ?? Number.NaN) - (before[name]?.[pick] ?? Number.NaN),
        ]),
      );
    const processMs = delta('all');
    const selfMs = (readSelfAndReapedCpuSeconds() - self0) * 1000;
    const oursMs = Object.values(processMs).reduce((s, x) => s + x, 0) + selfMs;
    const machineMs = (readMachineBusySeconds() - machine0) * 1000;
    return {
      seconds,
      processMs,
      mainMs: delta('main'),
      mainWaitMs: delta('wait'),
      selfMs,
      otherPct: Math.max(0, (machineMs - oursMs) / seconds / 10),
      loadBefore,
      loadAfter: loadavg()[0] ?? Number.NaN,
    };
  };
}

async function quiet(args: LocksArgs): Promise<void> {
  if (args.quietWaitS > 0 && !(await waitForQuiet(args.quietWaitS * 1000))) {
    process.stderr.write(`the machine was not idle after ${args.quietWaitS} s: measuring anyway\n`);
  }
}

// ---------------------------------------------------------------------------------------------

async function runLocksBench(args: LocksArgs): Promise<Record<string, unknown>> {
  const etcd = await startEtcdCluster({ size: 1 });
  const started: ServerProcess[] = [];
  try {
    const flags = (name: string, server: boolean): string[] => [
      ...etcd.endpoints.flatMap((url) => ['-etcd', url]),
      ...(server ? ['-server'] : []),
      '-node',
      name,
    ];
    const start = async (name: string, server: boolean): Promise<ServerProcess> => {
      const agent = await startAgent('dev', flags(name, server));
      started.push(agent);
      return agent;
    };
    // The first server alone: it creates the CA.
    const a = await start('bench-a', true);
    const agents: Agents = { a, b: await start('bench-b', true), c: await start('bench-c', false) };
    const etcdPid = childPid('etcd');
    const pids: Pids = {
      a: a.pid,
      b: agents.b.pid,
      c: agents.c.pid,
      ...(etcdPid === undefined ? {} : { etcd: etcdPid }),
    };
    const result: Record<string, unknown> = {};
    if (args.only.has('locks')) result['locks'] = await lockRows(agents, etcd.endpoints, pids, args);
    if (args.only.has('events')) {
      await quiet(args);
      result['events'] = await eventRows(agents, pids, args);
    }
    // Last: its sessions lapse a minute after the row, when nothing is measured any more.
    if (args.only.has('renewals')) result['renewals'] = await renewalRows(agents, pids, args);
    return result;
  } finally {
    for (const agent of started.reverse()) await agent.stop();
    await etcd.stop();
  }
}

type Spread = { p50Ms: number; p99Ms: number; maxMs: number; missing?: number };

function printLocks(x: Record<string, unknown>): string {
  type Side = {
    medianMs: number;
    p99Ms: number;
    acquireMedianMs: number;
    releaseMedianMs: number;
    failed: number;
    cpuUsPerTrip: Record<string, number>;
  };
  const etcd = x['etcd'] as Side;
  const row = (name: string, s: Side) => [
    name,
    s.medianMs,
    s.p99Ms,
    s.acquireMedianMs,
    s.releaseMedianMs,
    s.medianMs / etcd.medianMs,
    s.failed,
    s.cpuUsPerTrip['all'],
    s.cpuUsPerTrip['etcd'],
    s.cpuUsPerTrip['bench'],
  ];
  const c = x['conditions'] as Conditions;
  return `${formatTable(
    [
      'lock acquire + release',
      'median ms',
      'p99 ms',
      'acquire ms',
      'release ms',
      'x etcd3',
      'failed',
      'cpu µs',
      'etcd µs',
      'bench µs',
    ],
    [
      row('bare etcd3 client (lease + txn)', etcd),
      row('through a server agent', x['server'] as Side),
      row('through a client agent', x['client'] as Side),
    ],
  )}\nclient / server: ${(x['clientOverServer'] as number).toFixed(2)}x; cpu µs: agents + etcd per round trip, net of their idle floor (${floorLine(x['idle'] as Conditions)}); ${conditionsLine(c)}\n`;
}

function printEvents(x: Record<string, unknown>): string {
  const per = x['perAgent'] as Record<string, Spread>;
  const row = (name: string, s: Spread) => [name, s.p50Ms, s.p99Ms, s.maxMs, s.missing];
  return `${formatTable(
    [`${x['events'] as number} events, from sending`, 'p50 ms', 'p99 ms', 'max ms', 'missing'],
    [
      row('until all three agents list it', x['everywhere'] as Spread),
      row('  server a', per['a'] as Spread),
      row('  server b', per['b'] as Spread),
      row('  client c', per['c'] as Spread),
      row('fire answered, through a server', x['ackThroughServer'] as Spread),
      row('fire answered, through the client', x['ackThroughClient'] as Spread),
    ],
  )}\n${conditionsLine(x['conditions'] as Conditions)}\n`;
}

function printRenewals(x: Record<string, unknown>): string {
  type Row = {
    perSecond: number;
    p50Ms: number;
    p99Ms: number;
    failed: number;
    cpuUsPerRenewal: Record<string, number>;
    conditions: Conditions;
  };
  const row = (name: string, r: Row) => {
    const us = r.cpuUsPerRenewal;
    return [
      name,
      r.perSecond,
      r.p50Ms,
      r.p99Ms,
      r.failed,
      us['a'],
      us['b'],
      us['c'],
      us['etcd'],
      us['all'],
      r.conditions.otherPct,
    ];
  };
  return `${formatTable(
    ['session renew', '/s', 'p50 ms', 'p99 ms', 'failed', 'a µs', 'b µs', 'c µs', 'etcd µs', 'all µs', 'other cpu%'],
    [row('through server a', x['server'] as Row), row('through client c', x['client'] as Row)],
  )}\n${x['sessions'] as number} sessions (TTL ${x['ttl'] as string}), ${x['loops'] as number} loops, ${x['durationS'] as number} s a row; CPU per renewal net of each process's idle floor (${floorLine(x['idle'] as Conditions)})\n`;
}

/** An idle window as % of a core per process, and the rest of the machine's. */
function floorLine(idle: Conditions): string {
  const each = Object.entries(idle.processMs).map(([name, ms]) => `${name} ${(ms / idle.seconds / 10).toFixed(1)}`);
  return `% of a core idle: ${each.join(', ')}; other ${idle.otherPct.toFixed(1)}`;
}

function conditionsLine(c: Conditions): string {
  return `other cpu ${c.otherPct.toFixed(1)} %, load ${c.loadBefore.toFixed(2)} -> ${c.loadAfter.toFixed(2)}`;
}

async function main(): Promise<void> {
  if (!agentBuilt()) {
    process.stdout.write(`${AGENT_MISSING}\n`);
    return;
  }
  const args = parseLocksArgs(process.argv.slice(2));
  const result = await runLocksBench(args);
  const parts: string[] = [];
  if (result['locks'] !== undefined) parts.push(printLocks(result['locks'] as Record<string, unknown>));
  if (result['events'] !== undefined) parts.push(printEvents(result['events'] as Record<string, unknown>));
  if (result['renewals'] !== undefined) parts.push(printRenewals(result['renewals'] as Record<string, unknown>));
  process.stdout.write(parts.join('\n'));
  process.stderr.write(
    `written: ${await writeJson('locks', { args: { ...args, only: [...args.only] }, ...result })}\n`,
  );
}

if (isEntryPoint(import.meta.url)) runMain(main);
