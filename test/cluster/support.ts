// What the etcd cluster tests share: three real agents (two servers, one client) on a real etcd
// cluster, a workload that counts every failed write, KV read and new leaf (no retry until one
// succeeds), and what an agent costs etcd from outside: its TCP connections to the etcd client
// ports (from /proc) and its resident memory. And the RBAC tests' set-up: a 3-member etcd with the
// roles of docs/cluster-security.md, agents run in process as the documented users, and their HTTP API.
import { readFile, readdir, readlink } from 'node:fs/promises';
import { createAgent, type Agent } from '../../src/agent/index.js';
import { loadConfig } from '../../src/config/load.js';
import { startAgent, type AgentProcess } from '../integration/support/agent-process.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { clientUser, enableDocumentedRbac, findEtcdctl } from '../support/etcd-rbac.js';

export interface ClusterAgents {
  readonly agents: readonly AgentProcess[];
  readonly names: readonly string[];
  stop(): Promise<void>;
}

export interface AgentsOptions {
  readonly prefix: string;
  readonly auth?: { readonly username: string; readonly password: string } | undefined;
  /** Member lease TTL (the agents' `cluster.member_ttl`). */
  readonly memberTtl?: string;
  /** The agents' `log_level` (default info); at debug each says why a call failed, for a failure's report. */
  readonly logLevel?: 'debug' | 'info';
  /** `http_config.header_brand`: 'Consul' for a Consul client library that reads X-Consul-Index. */
  readonly headerBrand?: string;
}

/**
 * One agent of the mesh `options` describe, on `etcd`: a server or a client agent named `name`;
 * `port`: the HTTP port (one a stopped agent had, so that its callers find it again).
 */
export function startClusterAgent(
  etcd: EtcdCluster,
  options: AgentsOptions,
  name: string,
  server: boolean,
  port?: number,
): Promise<AgentProcess> {
  return startAgent({
    ...(port === undefined ? {} : { port }),
    config: {
      node_name: name,
      ...(options.logLevel === undefined ? {} : { log_level: options.logLevel }),
      ...(options.headerBrand === undefined ? {} : { http_config: { header_brand: options.headerBrand } }),
      cluster: {
        etcd: { prefix: options.prefix, ...(options.auth === undefined ? {} : options.auth) },
        member_ttl: options.memberTtl ?? '3s',
      },
    },
    args: [...etcd.endpoints.flatMap((url) => ['-etcd', url]), ...(server ? ['-server'] : [])],
  });
}

/** Servers a and b, client c; the first server starts alone so that it creates the CA. */
export async function startClusterAgents(etcd: EtcdCluster, options: AgentsOptions): Promise<ClusterAgents> {
  const started: AgentProcess[] = [];
  const start = async (name: string, server: boolean): Promise<AgentProcess> => {
    const agent = await startClusterAgent(etcd, options, name, server);
    started.push(agent);
    return agent;
  };
  try {
    const a = await start('agent-a', true);
    const [b, c] = await Promise.all([start('agent-b', true), start('agent-c', false)]);
    return { agents: [a, b, c], names: ['agent-a', 'agent-b', 'agent-c'], stop: () => stopAll(started) };
  } catch (err) {
    await stopAll(started);
    throw err;
  }
}

async function stopAll(agents: readonly AgentProcess[]): Promise<void> {
  await Promise.all(agents.map((a) => a.stop('SIGKILL')));
}

/** Every call is given this long; one that takes longer counts as a failure. */
export const CALL_BOUND_MS = 10_000;

export interface Tally {
  ops: number;
  failures: number;
  /** The first few failures, for the assertion message. */
  readonly samples: string[];
  /** The slowest call that succeeded, in ms. */
  slowestMs: number;
}

type Check = (status: number, text: string) => boolean;

export async function timed(url: string, init: RequestInit, check: Check, tally: Tally): Promise<void> {
  const started = performance.now();
  tally.ops++;
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(CALL_BOUND_MS) });
    const text = await res.text();
    if (!check(res.status, text)) throw new Error(`${res.status} ${text.slice(0, 200)}`);
    tally.slowestMs = Math.max(tally.slowestMs, performance.now() - started);
  } catch (err) {
    tally.failures++;
    const what = `${init.method ?? 'GET'} ${new URL(url).pathname}`;
    if (tally.samples.length < 5) tally.samples.push(`${what}: ${(err as Error).message}`);
  }
}

export function newTally(): Tally {
  return { ops: 0, failures: 0, samples: [], slowestMs: 0 };
}

/**
 * `writes` KV writes through `agent`, each read back through it, and a leaf for a new service every
 * `leafEvery` writes; `progress(i)` after each write. Every call counts once, success or failure.
 */
export async function workload(
  agent: AgentProcess,
  run: string,
  writes: number,
  progress: (done: number) => void = () => {},
  leafEvery = 25,
): Promise<Tally> {
  const tally = newTally();
  for (let i = 0; i < writes; i++) {
    const key = `faults/${run}/${i}`;
    const value = `v-${run}-${i}`;
    const put = { method: 'PUT', body: value };
    await timed(`${agent.url}/v1/kv/${key}`, put, (s, t) => s === 200 && t.trim() === 'true', tally);
    await timed(`${agent.url}/v1/kv/${key}?raw`, { method: 'GET' }, (s, t) => s === 200 && t === value, tally);
    if (i % leafEvery === 0) {
      await timed(`${agent.url}/v1/agent/connect/ca/leaf/svc-${run}-${i}`, { method: 'GET' }, (s) => s === 200, tally);
    }
    progress(i + 1);
  }
  return tally;
}

/** Resolves once `count` calls of the returned function have been made with a value ≥ `at`, one per worker. */
export function whenAllReach(
  workers: number,
  at: number,
): { reached: Promise<void>; report: (worker: number, done: number) => void } {
  const passed = new Set<number>();
  let release: () => void = () => {};
  const reached = new Promise<void>((r) => (release = r));
  return {
    reached,
    report(worker, done) {
      if (done < at || passed.has(worker)) return;
      passed.add(worker);
      if (passed.size === workers) release();
    },
  };
}

/** The agent's established TCP connections to any of `ports` (its sockets from /proc/<pid>/fd). */
export async function etcdConnections(pid: number, ports: readonly number[]): Promise<number> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m) inodes.add(m[1] as string);
  }
  let count = 0;
  for (const table of ['tcp', 'tcp6']) {
    const text = await readFile(`/proc/${pid}/net/${table}`, 'utf8').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const remotePort = parseInt((cols[2] as string).split(':')[1] as string, 16);
      // 01: ESTABLISHED.
      if (cols[3] === '01' && ports.includes(remotePort) && inodes.has(cols[9] as string)) count++;
    }
  }
  return count;
}

/** Resident memory of a process in bytes. */
export async function rssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = /VmRSS:\s+(\d+) kB/.exec(status);
  return kb ? Number(kb[1]) * 1024 : 0;
}

export function clientPorts(etcd: EtcdCluster): number[] {
  return etcd.endpoints.map((u) => Number(new URL(u).port));
}

/** Log lines at info level or above that carry a stack trace (`at …` frames). */
/** Prints what each agent logged since `logFrom` (its last `max` lines): the trace a failed fault case leaves. */
export function printSaid(
  cluster: ClusterAgents,
  logFrom: readonly number[],
  since: string,
  options: { readonly debug?: boolean; readonly max?: number } = {},
): void {
  for (const [i, agent] of cluster.agents.entries()) {
    const said = agent.logs
      .slice(logFrom[i])
      .filter((l) => l.level !== 'trace' && (options.debug === true || l.level !== 'debug'));
    const lines = said.slice(-(options.max ?? 60)).map((l) => JSON.stringify(l));
    console.log(`${cluster.names[i]} since ${since}:\n${lines.join('\n')}`);
  }
}

export function stackLines(agent: AgentProcess): Record<string, unknown>[] {
  const hasStack = (l: Record<string, unknown>): boolean => /\n\s+at /.test(JSON.stringify(l).replace(/\\n/g, '\n'));
  return agent.logs.filter((l) => l.level !== 'debug' && l.level !== 'trace' && hasStack(l));
}

/** etcd's count of gRPC calls handled whose labels include `label` (`grpc_code="…"`), over all members. */
export async function grpcHandled(etcd: EtcdCluster, label: string): Promise<number> {
  let total = 0;
  for (const url of etcd.endpoints) {
    const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
    for (const line of text.split('\n')) {
      if (line.startsWith('grpc_server_handled_total{') && line.includes(label))
        total += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
  }
  return total;
}

/** Polls `read` until `done` accepts its value (etcd has no push for what these wait on); the test timeout guards. */
export async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, pauseMs = 100): Promise<T> {
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    await new Promise((r) => setTimeout(r, pauseMs));
  }
}

/** Like until, but gives up after `limitMs` and returns the last value (for an assertion to follow). */
export async function settled<T>(
  read: () => Promise<T>,
  done: (value: T) => boolean,
  limitMs: number,
  pauseMs = 250,
): Promise<T> {
  const end = performance.now() + limitMs;
  for (;;) {
    const value = await read();
    if (done(value) || performance.now() > end) return value;
    await new Promise((r) => setTimeout(r, pauseMs));
  }
}

/** An agent run in this process (createAgent) and its HTTP address. */
export interface InProcessAgent {
  readonly agent: Agent;
  readonly url: string;
}

export interface RbacAgentOptions {
  /** Default `/svc/`: the prefix the roles were granted on. */
  readonly prefix?: string | undefined;
  readonly initialManagement?: string | undefined;
}

export interface RbacCluster {
  readonly etcd: EtcdCluster;
  /** An agent with ACLs on (default deny), as svc-server-1 or, for a client, its node's own user. */
  start(name: string, server: boolean, options?: RbacAgentOptions): Promise<InProcessAgent>;
  /** Runs `fn` at stop(), before etcd stops (last added, first run). */
  onStop(fn: () => unknown): void;
  /** Closes every agent started and whatever onStop registered, then etcd. */
  stop(): Promise<void>;
}

/** A 3-member etcd with docs/cluster-security.md's roles on `prefix`, one client user per node in `clientNodes`. */
export async function startRbacCluster(prefix: string, clientNodes: readonly string[]): Promise<RbacCluster> {
  const etcdctl = await findEtcdctl();
  if (etcdctl === undefined) throw new Error('etcdctl is needed to set up RBAC');
  const etcd = await startEtcdCluster({ size: 3 });
  const cleanups: (() => unknown)[] = [];
  const stop = async (): Promise<void> => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
    await etcd.stop();
  };
  try {
    await enableDocumentedRbac(etcd, etcdctl, prefix, clientNodes);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    etcd,
    async start(name, server, options = {}) {
      const user = server ? 'svc-server-1' : clientUser(name);
      const flags = {
        ports: { http: 0 },
        client_addr: '127.0.0.1',
        node_name: name,
        server,
        acl: {
          enabled: true,
          default_policy: 'deny' as const,
          tokens: options.initialManagement === undefined ? {} : { initial_management: options.initialManagement },
        },
        cluster: {
          etcd: { endpoints: etcd.endpoints, prefix: options.prefix ?? prefix, username: user, password: `${user}-pw` },
        },
      };
      const agent = await createAgent(loadConfig({ files: [], flags, dev: true }));
      cleanups.push(() => agent.close());
      return { agent, url: `http://127.0.0.1:${await agent.listen()}` };
    },
    onStop: (fn) => cleanups.push(fn),
    stop,
  };
}

/** JSON answers are read field by field in the tests; any error shows as a failed expectation. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Answer = { status: number; body: any };

/** One HTTP call with `token`; a string body goes as it is, anything else as JSON; the answer parsed when JSON. */
export async function callAgent(
  at: InProcessAgent,
  method: string,
  path: string,
  body: unknown,
  token: string,
): Promise<Answer> {
  const res = await fetch(`${at.url}${path}`, {
    method,
    headers: { 'X-Svc-Token': token },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}
