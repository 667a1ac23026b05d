// Real etcd members for tests: finds or installs etcd (scripts/ensure-etcd.sh), starts 1 or 3
// members on free loopback ports with temporary data dirs, waits for their health endpoint, and
// kills, pauses (SIGSTOP), resumes and restarts them for the fail-open tests; names the leader,
// turns auth on and lists leases with etcdctl for the fault tests.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

/** Found from here upwards: this file also runs compiled under dist/ (bench/sizing/cluster.ts uses it). */
const ENSURE_SCRIPT = findUp(import.meta.dirname, 'scripts/ensure-etcd.sh');
/** tmpfs when there is one: etcd fsyncs every raft batch, and the tests need no durability. */
const DATA_ROOT = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
const HEALTH_POLL_MS = 25;
/** Only a bound on a member that never recovers: a member back from a pause or a cut catches up on what it missed, on a host loaded by the whole suite. */
const HEALTH_DEADLINE_MS = 60_000;
/** A SIGSTOP reaches every thread within milliseconds; a thread in uninterruptible sleep stops when it wakes. */
const PAUSE_DEADLINE_MS = 10_000;

let etcdBinary: Promise<string> | undefined;
/** Killed when the test process exits however it ends, so no member outlives its test run. */
const liveChildren = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of liveChildren) child.kill('SIGKILL');
});

/** The etcd binary, installed once per test process if missing (root on Debian only). */
export function ensureEtcd(): Promise<string> {
  etcdBinary ??= promisify(execFile)(ENSURE_SCRIPT, [], { encoding: 'utf8' }).then(({ stdout }) => stdout.trim());
  return etcdBinary;
}

export interface EtcdMember {
  readonly name: string;
  readonly clientUrl: string;
  readonly running: boolean;
  /** SIGKILL; the data dir stays, so `start()` brings the member back with its data. */
  kill(): Promise<void>;
  /** SIGSTOP: the process keeps its sockets open but answers nothing (a hung member); resolves once it is stopped. */
  pause(): Promise<void>;
  /** SIGCONT after `pause()`. */
  resume(): void;
  /** Starts the (killed) member again on the same ports and data dir; resolves once it is healthy. */
  start(): Promise<void>;
}

export interface EtcdCluster {
  readonly members: readonly EtcdMember[];
  /** Client URLs of every member, for the store's `endpoints`. */
  readonly endpoints: string[];
  /** Resolves once a member answers healthy (the cluster has a leader). */
  waitHealthy(member?: EtcdMember): Promise<void>;
  /** The member that is the raft leader now (asked of every running member). */
  leader(): Promise<EtcdMember>;
  /** Turns etcd auth on with a `root` user of this password; later calls of `etcdctl` pass it. */
  enableAuth(password: string): Promise<void>;
  /** The IDs of every lease etcd holds (`etcdctl lease list`). */
  leases(): Promise<string[]>;
  /** Runs `etcdctl` against the running members (as root once auth is on); its standard output. */
  etcdctl(...args: string[]): Promise<string>;
  /** Kills every member and removes the data dirs. */
  stop(): Promise<void>;
}

/** Where a member runs: an address of its own and the command that puts it there (test/support/netns.ts). */
export interface EtcdPlace {
  readonly host: string;
  readonly command: readonly string[];
}

/**
 * `dataRoot`: where the members' data dirs go (default tmpfs; a bench of durable writes passes a disk).
 * `places`: one per member, each on etcd's own ports (default: loopback, free ports, run as is).
 */
export async function startEtcdCluster(
  options: { size?: 1 | 3; args?: readonly string[]; dataRoot?: string; places?: readonly EtcdPlace[] } = {},
): Promise<EtcdCluster> {
  const binary = await ensureEtcd();
  const size = options.size ?? 1;
  const root = await mkdtemp(join(options.dataRoot ?? DATA_ROOT, 'svc-agent-etcd-'));
  const token = `svc-agent-test-${process.pid}-${Date.now()}`;
  const specs = [];
  for (let i = 0; i < size; i++) {
    const place = options.places?.[i];
    const [client, peer] = place === undefined ? [await freePort(), await freePort()] : [2379, 2380];
    const at = { host: place?.host ?? '127.0.0.1', command: place?.command ?? [] };
    specs.push({ name: `m${i}`, client, peer, dataDir: join(root, `m${i}`), ...at });
  }
  const initialCluster = specs.map((s) => `${s.name}=http://${s.host}:${s.peer}`).join(',');
  const members = specs.map(
    (s) =>
      new Member(s.command, binary, s.name, `http://${s.host}:${s.client}`, [
        `--name=${s.name}`,
        `--data-dir=${s.dataDir}`,
        `--listen-client-urls=http://${s.host}:${s.client}`,
        `--advertise-client-urls=http://${s.host}:${s.client}`,
        `--listen-peer-urls=http://${s.host}:${s.peer}`,
        `--initial-advertise-peer-urls=http://${s.host}:${s.peer}`,
        `--initial-cluster=${initialCluster}`,
        `--initial-cluster-state=new`,
        `--initial-cluster-token=${token}`,
        '--logger=zap',
        '--log-level=error',
        ...(options.args ?? []),
      ]),
  );
  let rootPassword: string | undefined;
  const etcdctl = async (...args: string[]): Promise<string> => {
    const endpoints = members.filter((m) => m.running).map((m) => m.clientUrl);
    const user = rootPassword === undefined ? [] : [`--user=root:${rootPassword}`];
    const { stdout } = await promisify(execFile)('etcdctl', [`--endpoints=${endpoints.join(',')}`, ...user, ...args], {
      encoding: 'utf8',
      env: { ...process.env, ETCDCTL_API: '3' },
      timeout: 30_000, // etcdctl's own --command-timeout is 5 s; this bounds the process too
    });
    return stdout;
  };
  const cluster: EtcdCluster = {
    members,
    endpoints: members.map((m) => m.clientUrl),
    waitHealthy: (member) => waitHealthy(member === undefined ? members : [member as Member]),
    async leader() {
      for (const m of members.filter((x) => x.running)) {
        const status = await memberStatus(m.clientUrl);
        if (status !== undefined && status.memberId === status.leader) return m;
      }
      throw new Error('no etcd member is the leader');
    },
    etcdctl,
    async enableAuth(password) {
      await etcdctl('user', 'add', `root:${password}`);
      await etcdctl('auth', 'enable');
      rootPassword = password;
    },
    async leases() {
      // "found N leases" then one "<hex id>" a line.
      return (await etcdctl('lease', 'list'))
        .split('\n')
        .slice(1)
        .map((l) => l.trim())
        .filter((l) => l !== '');
    },
    async stop() {
      await Promise.all(members.map((m) => m.kill()));
      await rm(root, { recursive: true, force: true });
    },
  };
  try {
    members.forEach((m) => m.spawnProcess());
    await cluster.waitHealthy();
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

class Member implements EtcdMember {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private stderrTail = '';

  constructor(
    /** Run before the binary (`ip netns exec <ns>`, which execs it: the pid stays etcd's). */
    private readonly command: readonly string[],
    private readonly binary: string,
    readonly name: string,
    readonly clientUrl: string,
    private readonly args: readonly string[],
  ) {}

  get running(): boolean {
    return this.child !== undefined;
  }

  get recentStderr(): string {
    return this.stderrTail;
  }

  spawnProcess(): void {
    const [program, ...args] = [...this.command, this.binary, ...this.args] as [string, ...string[]];
    const child = spawn(program, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child = child;
    liveChildren.add(child);
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderrTail = (this.stderrTail + chunk).slice(-4000);
    });
    this.exited = new Promise((done) =>
      child.once('exit', () => {
        liveChildren.delete(child);
        if (this.child === child) this.child = undefined;
        done();
      }),
    );
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    child.kill('SIGKILL');
    await this.exited;
  }

  async pause(): Promise<void> {
    const pid = this.child?.pid;
    if (pid === undefined) return;
    this.child?.kill('SIGSTOP');
    // kill() only queues the signal: wait until every thread of the Go runtime is stopped.
    const deadline = Date.now() + PAUSE_DEADLINE_MS;
    for (let running = await runningThreads(pid); running.length > 0; running = await runningThreads(pid)) {
      if (Date.now() > deadline) throw new Error(`etcd member ${this.name} not stopped: threads ${running.join(' ')}`);
      await new Promise((r) => setTimeout(r, 1));
    }
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  async start(): Promise<void> {
    if (this.child !== undefined) throw new Error(`etcd member ${this.name} is already running`);
    this.spawnProcess();
    await waitHealthy([this]);
  }
}

/** Polls each member's /health until it reports a leader (etcd has no push notice for that). */
async function waitHealthy(members: readonly Member[]): Promise<void> {
  const deadline = Date.now() + HEALTH_DEADLINE_MS;
  for (const m of members) {
    for (;;) {
      if (!m.running) throw new Error(`etcd member ${m.name} exited: ${m.recentStderr}`);
      if (await isHealthy(m.clientUrl)) break;
      if (Date.now() > deadline) {
        const statuses = await Promise.all(members.map(async (x) => `${x.name} ${await rawStatus(x.clientUrl)}`));
        throw new Error(`etcd member ${m.name} not healthy; status:\n${statuses.join('\n')}\n${m.recentStderr}`);
      }
      await new Promise((r) => setTimeout(r, HEALTH_POLL_MS));
    }
  }
}

/** A member's status answer, from etcd's HTTP gateway: no quorum and no auth needed. */
export function requestStatus(clientUrl: string): Promise<Response> {
  return fetch(`${clientUrl}/v3/maintenance/status`, {
    method: 'POST',
    body: '{}',
    signal: AbortSignal.timeout(1000),
  });
}

/** A member's own ID and the leader it knows. */
async function memberStatus(clientUrl: string): Promise<{ memberId: string; leader: string } | undefined> {
  try {
    const res = await requestStatus(clientUrl);
    const body = (await res.json()) as { header?: { member_id?: string }; leader?: string };
    const memberId = body.header?.member_id;
    return memberId === undefined || body.leader === undefined ? undefined : { memberId, leader: body.leader };
  } catch {
    return undefined;
  }
}

/** A member's whole status answer (its term, leader and raft indexes), or why there is none. */
async function rawStatus(clientUrl: string): Promise<string> {
  try {
    return await (await requestStatus(clientUrl)).text();
  } catch (err) {
    return String(err);
  }
}

async function isHealthy(clientUrl: string): Promise<boolean> {
  try {
    const res = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(1000) });
    const body = (await res.json()) as { health?: string };
    return body.health === 'true';
  } catch {
    return false;
  }
}

/** The threads of `pid` not yet stopped, as `tid:state`. */
async function runningThreads(pid: number): Promise<string[]> {
  const running: string[] = [];
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
    // The state is the field after the parenthesised command name: T (stopped), t (traced), or a
    // thread that has exited (Z, X) and will not run again.
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (!['', 'T', 't', 'Z', 'X'].includes(state)) running.push(`${tid}:${state}`);
  }
  return running;
}

export function findUp(from: string, relative: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, relative);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`${relative} not found above ${from}`);
  }
}

/**
 * A loopback port nobody listens on, chosen below the kernel's ephemeral range (32768 and up here):
 * a port the kernel handed out for listen(0) can be taken by any outgoing connection between our
 * close and etcd's bind, while these ports are never handed out. Only another etcd of these tests
 * could take one, so none is drawn twice: a process never hands a port out again (a cluster's
 * members draw all their ports before any binds, so two draws of one port would both pass the
 * check), and each vitest worker draws from its own range (the other worker's clusters cannot take
 * it). A member once failed with `address already in use`; either case could have caused it.
 */
async function freePort(): Promise<number> {
  while (handedOut.size < WORKER_PORTS) {
    const port = WORKER_PORTS_FROM + Math.floor(Math.random() * WORKER_PORTS);
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    if (await bindable(port)) return port;
  }
  throw new Error(`every port of ${WORKER_PORTS_FROM}-${WORKER_PORTS_FROM + WORKER_PORTS - 1} was handed out once`);
}

const handedOut = new Set<number>();
// 15000-32767 split four ways by vitest's worker number (1..maxWorkers; 1 outside vitest).
const WORKER_PORTS = 4_400;
const WORKER_PORTS_FROM = 15_000 + (((Number(process.env.VITEST_POOL_ID) || 1) - 1) % 4) * WORKER_PORTS;

function bindable(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(false));
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
  });
}
