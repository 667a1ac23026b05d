// The scale harness (issue 46): N agents against one etcd on this machine. A few are real agent
// processes (the server agents every client forwards its writes to, and `realClients` client
// agents); the rest are agent instances built by createAgent (instance.ts), many to a host process
// (host.ts). Each instance has its own etcd client, member lease, view watch and leadership probe,
// and registers a node with `services` services and TTL checks through anti-entropy. The harness
// writes through a server agent's HTTP API, flips checks in the hosts, kills hosts, and waits on
// every view for the result, timing each arrival by the machine's wall clock.
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { ensureEtcd, startEtcdCluster, type EtcdCluster } from '../../test/support/etcd.js';
import { freePort, LOOPBACK, waitForPort } from '../support/ports.js';
import { sampleEtcd, type EtcdSample } from './etcd-metrics.js';
import {
  checkId,
  wallMs,
  type Arrivals,
  type Condition,
  type FromHost,
  type HostStats,
  type InstanceSpec,
  type ToHost,
} from './protocol.js';
import { builtFile, serviceChecksByNode, startRealAgent, type RealAgent } from './real-agent.js';

const HOST_MAIN = builtFile('bench/scale/host.js');

export interface ScaleOptions {
  /** Agents in all: servers, real clients and in-process instances. */
  readonly agents: number;
  /** Host processes the in-process instances are spread over. */
  readonly hosts: number;
  /** Real server agent processes (default 2). */
  readonly servers?: number;
  /** Real client agent processes (default 1). */
  readonly realClients?: number;
  /** Services (each with a TTL check) per node (default 10). */
  readonly services?: number;
  /** `cluster.member_ttl` of every agent (default 10s, the agent's default). */
  readonly memberTtl?: string;
  /** `cluster.leader_probe_interval` of every agent (default 500ms, the agent's default). */
  readonly probeInterval?: string;
  /** An `etcd grpc-proxy` in front of etcd: every agent connects to it. */
  readonly grpcProxy?: boolean;
  /**
   * Instances each host starts at once (default 2): each start reads the whole view, and a host
   * whose event loop is late makes etcd calls miss their deadlines (real agents start one per machine).
   */
  readonly startConcurrency?: number;
}

export interface Propagation {
  /** When the change was made (ms, wall clock). */
  readonly sentAt: number;
  /** Milliseconds from sentAt to each view holding it; undefined: not within the limit. */
  readonly lags: readonly (number | undefined)[];
}

export interface ProcessLoad {
  readonly pid: number;
  readonly role: 'server' | 'client' | 'host' | 'etcd' | 'proxy';
}

export class ScaleHarness {
  private nextId = 1;
  private readonly replies = new Map<number, { ok: (m: FromHost) => void; fail: (e: Error) => void }>();
  private readonly liveHosts: Host[] = [];
  private proxy: ChildProcess | undefined;

  private constructor(
    readonly etcd: EtcdCluster,
    /** What the agents connect to: etcd's members, or the proxy. */
    readonly endpoints: readonly string[],
    readonly prefix: string,
    readonly options: Required<ScaleOptions>,
    /** etcd's leases and watchers before any agent started. */
    readonly baseline: { readonly leases: number; readonly watchers: number },
  ) {}

  readonly servers: RealAgent[] = [];
  readonly realClients: RealAgent[] = [];
  /** Every node name, in start order: servers, real clients, then the hosts' instances. */
  readonly names: string[] = [];

  static async start(given: ScaleOptions): Promise<ScaleHarness> {
    const options: Required<ScaleOptions> = {
      servers: 2,
      realClients: 1,
      services: 10,
      memberTtl: '10s',
      probeInterval: '500ms',
      grpcProxy: false,
      startConcurrency: 2,
      ...given,
    };
    const etcd = await startEtcdCluster({ size: 1 });
    const baseline = {
      leases: (await etcd.leases()).length,
      watchers: (await sampleEtcd(etcd.endpoints[0] as string)).watchers,
    };
    const prefix = `/scale-${process.pid}-${Date.now()}/`;
    let proxy: { child: ChildProcess; url: string } | undefined;
    try {
      if (options.grpcProxy) proxy = await startGrpcProxy(etcd);
    } catch (err) {
      await etcd.stop();
      throw err;
    }
    const harness = new ScaleHarness(
      etcd,
      proxy === undefined ? etcd.endpoints : [proxy.url],
      prefix,
      options,
      baseline,
    );
    harness.proxy = proxy?.child;
    try {
      await harness.startAgents();
    } catch (err) {
      await harness.stop();
      throw err;
    }
    return harness;
  }

  /** The in-process instances' node names. */
  get instanceNames(): string[] {
    return this.liveHosts.flatMap((h) => h.names);
  }

  /** The processes whose CPU and memory the figures are made of. */
  get processes(): ProcessLoad[] {
    return [
      ...this.servers.map((a) => ({ pid: a.pid, role: 'server' as const })),
      ...this.realClients.map((a) => ({ pid: a.pid, role: 'client' as const })),
      ...this.liveHosts.map((h) => ({ pid: h.child.pid as number, role: 'host' as const })),
      ...(this.proxy?.pid === undefined ? [] : [{ pid: this.proxy.pid, role: 'proxy' as const }]),
    ];
  }

  get hostCount(): number {
    return this.liveHosts.length;
  }

  private spec(names: readonly string[]): InstanceSpec {
    const o = this.options;
    return {
      names,
      endpoints: this.endpoints,
      prefix: this.prefix,
      memberTtl: o.memberTtl,
      probeInterval: o.probeInterval,
      services: o.services,
      startConcurrency: o.startConcurrency,
    };
  }

  private async startAgents(): Promise<void> {
    const o = this.options;
    const real = (name: string, server: boolean) =>
      startRealAgent({ ...this.spec([]), name, server, endpoints: this.endpoints });
    // The first server alone: it creates the CA.
    for (let i = 0; i < o.servers; i++) {
      const name = `scale-server-${i}`;
      this.names.push(name);
      if (i === 0) this.servers.push(await real(name, true));
    }
    const rest = await Promise.all([
      ...this.names.slice(1).map((n) => real(n, true)),
      ...Array.from({ length: o.realClients }, (_, i) => {
        const name = `scale-client-${i}`;
        this.names.push(name);
        return real(name, false);
      }),
    ]);
    for (const agent of rest) (agent.server ? this.servers : this.realClients).push(agent);
    const inProcess = Math.max(0, o.agents - o.servers - o.realClients);
    const perHost = Math.ceil(inProcess / Math.max(1, o.hosts));
    const groups: string[][] = [];
    for (let h = 0, made = 0; made < inProcess; h++) {
      const names = Array.from({ length: Math.min(perHost, inProcess - made) }, (_, i) => `scale-h${h}-${i}`);
      made += names.length;
      groups.push(names);
      this.names.push(...names);
    }
    await Promise.all(groups.map((names) => this.startHost(names)));
  }

  /** Starts one more host process with these instances (a join); resolves once each has started. */
  async startHost(names: readonly string[]): Promise<void> {
    const child = fork(HOST_MAIN, [], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], serialization: 'json' });
    const host: Host = { child, names: [...names], exited: new Promise((done) => child.once('exit', () => done())) };
    child.on('message', (m: FromHost) => this.reply(m));
    void host.exited.then(() => {
      const i = this.liveHosts.indexOf(host);
      if (i >= 0) this.liveHosts.splice(i, 1);
    });
    this.liveHosts.push(host);
    await this.ask(host, (id) => ({ type: 'start', id, spec: this.spec(names) }));
  }

  private reply(m: FromHost): void {
    const waiter = this.replies.get(m.id);
    if (waiter === undefined) return;
    this.replies.delete(m.id);
    if (m.type === 'error') waiter.fail(new Error(`host: ${m.message}`));
    else waiter.ok(m);
  }

  /** Sends a request to `host` and resolves with its answer. */
  private ask(host: Host, make: (id: number) => ToHost): Promise<FromHost> {
    const id = this.nextId++;
    const answer = this.expect(host, id);
    host.child.send(make(id));
    return answer;
  }

  /** The answer `host` gives to request `id`; fails if the host exits first. */
  private expect(host: Host, id: number): Promise<FromHost> {
    return new Promise<FromHost>((ok, fail) => {
      this.replies.set(id, { ok, fail });
      void host.exited.then(() => {
        if (this.replies.delete(id)) fail(new Error(`host ${host.child.pid} exited`));
      });
    });
  }

  /**
   * Waits on `condition` in every view of `hosts`' instances (each armed before `change` runs) and
   * of the real agents (by blocking query on `real`). `change` makes the change and returns when.
   */
  async propagation(
    condition: Condition,
    real: { path: string; holds: (body: unknown) => boolean },
    change: () => Promise<number>,
    limitMs: number,
    hosts: readonly Host[] = this.liveHosts,
  ): Promise<Propagation> {
    const waits = hosts.map((host) => {
      const armedId = this.nextId++;
      const armed = this.expect(host, armedId);
      const arrivals = this.ask(host, (id) => ({ type: 'await', id, armedId, condition, limitMs }));
      return { armed, arrivals: arrivals.then((m) => (m as { arrivals: Arrivals }).arrivals) };
    });
    await Promise.all(waits.map((w) => w.armed));
    // The real agents' blocking queries may start after the change: an arrival there still counts
    // from when their view held it.
    const sentAt = await change();
    const realAgents = [...this.servers, ...this.realClients];
    const [hostArrivals, realArrivals] = await Promise.all([
      Promise.all(waits.map((w) => w.arrivals)),
      Promise.all(realAgents.map((a) => a.awaitView(real.path, real.holds, limitMs))),
    ]);
    const lags = [...hostArrivals.flat(), ...realArrivals].map((at) => (at === undefined ? undefined : at - sentAt));
    return { sentAt, lags };
  }

  /** Waits until every view (instances and real agents) holds every node with all its services. */
  async awaitAllNodes(limitMs: number): Promise<Propagation> {
    const names = this.names;
    const services = this.options.services;
    const realHolds = (body: unknown): boolean => {
      const counts = serviceChecksByNode(body);
      return names.every((n) => n.startsWith('scale-server-') || (counts.get(n) ?? 0) >= services);
    };
    // Server nodes carry the consul service only: they are waited for as nodes with no service count.
    const condition: Condition = { kind: 'nodes', names: this.clientNames(), services };
    const now = (): Promise<number> => Promise.resolve(wallMs());
    return this.propagation(condition, { path: '/v1/health/state/any', holds: realHolds }, now, limitMs);
  }

  private clientNames(): string[] {
    return this.names.filter((n) => !n.startsWith('scale-server-'));
  }

  /** Writes an intention through the first server agent and times its arrival in every view. */
  async intentionWrite(
    source: string,
    destination: string,
    action: 'allow' | 'deny',
    limitMs: number,
  ): Promise<Propagation> {
    const server = this.servers[0] as RealAgent;
    const holds = (body: unknown): boolean =>
      (body as { SourceName: string; DestinationName: string; Action: string }[]).some(
        (i) => i.SourceName === source && i.DestinationName === destination && i.Action === action,
      );
    return this.propagation(
      { kind: 'intention', source, destination, action },
      { path: '/v1/connect/intentions', holds },
      async () => {
        const sentAt = wallMs();
        const res = await fetch(
          `${server.url}/v1/connect/intentions/exact?source=${source}&destination=${destination}`,
          {
            method: 'PUT',
            body: JSON.stringify({ Action: action }),
          },
        );
        if (!res.ok) throw new Error(`intention write: ${res.status} ${await res.text()}`);
        return sentAt;
      },
      limitMs,
    );
  }

  /** Flips check `service` of instance `node` to `status` in its host and times its arrival in every view. */
  async checkFlip(
    node: string,
    service: number,
    status: 'passing' | 'warning' | 'critical',
    limitMs: number,
  ): Promise<Propagation> {
    const host = this.liveHosts.find((h) => h.names.includes(node));
    if (host === undefined) throw new Error(`no host runs ${node}`);
    const id = checkId(service);
    const holds = (body: unknown): boolean =>
      (body as { CheckID: string; Status: string }[]).some((c) => c.CheckID === id && c.Status === status);
    return this.propagation(
      { kind: 'check', nodes: [node], checkId: id, status },
      { path: `/v1/health/node/${node}`, holds },
      async () => {
        const answer = await this.ask(host, (rid) => ({ type: 'flip', id: rid, node, checkId: id, status }));
        return (answer as { at: number }).at;
      },
      limitMs,
    );
  }

  /** SIGKILLs host `index` (its instances crash); times each killed node's serfHealth going critical in every other view. */
  async killHost(index: number, limitMs: number): Promise<Propagation & { readonly nodes: readonly string[] }> {
    const host = this.liveHosts[index];
    if (host === undefined) throw new Error(`no host ${index}`);
    const nodes = host.names;
    const holds = (body: unknown): boolean => {
      const critical = new Set(
        (body as { Node: string; CheckID: string }[]).filter((c) => c.CheckID === 'serfHealth').map((c) => c.Node),
      );
      return nodes.every((n) => critical.has(n));
    };
    const others = this.liveHosts.filter((h) => h !== host);
    const result = await this.propagation(
      { kind: 'check', nodes, checkId: 'serfHealth', status: 'critical' },
      { path: '/v1/health/state/critical', holds },
      async () => {
        const at = wallMs();
        host.child.kill('SIGKILL');
        await host.exited;
        return at;
      },
      limitMs,
      others,
    );
    this.names.splice(0, this.names.length, ...this.names.filter((n) => !nodes.includes(n)));
    return { ...result, nodes };
  }

  /** Each host's stats. */
  async hostStats(): Promise<HostStats[]> {
    return Promise.all(
      this.liveHosts.map(
        async (h) => ((await this.ask(h, (id) => ({ type: 'stats', id }))) as { stats: HostStats }).stats,
      ),
    );
  }

  /** Flips `perSecond` checks a second over all instances (0 stops); each host takes its share. */
  async churnChecks(perSecond: number): Promise<void> {
    const total = this.liveHosts.reduce((n, h) => n + h.names.length, 0);
    await Promise.all(
      this.liveHosts.map((h) =>
        this.ask(h, (id) => ({
          type: 'churn-checks',
          id,
          perSecond: total === 0 ? 0 : (perSecond * h.names.length) / total,
        })),
      ),
    );
  }

  /** A KV write through a server agent (read through from etcd by every agent that asks). */
  async kvWrite(key: string, value: string): Promise<void> {
    const server = this.servers[this.nextId % this.servers.length] as RealAgent;
    const res = await fetch(`${server.url}/v1/kv/${key}`, { method: 'PUT', body: value });
    if (!res.ok) throw new Error(`kv write: ${res.status}`);
  }

  async etcdSample(): Promise<EtcdSample> {
    return sampleEtcd(this.etcd.endpoints[0] as string);
  }

  /** Every agent leaves gracefully: the hosts close their instances, the real agents stop on SIGTERM. */
  async leaveAll(): Promise<void> {
    await Promise.all(
      this.liveHosts.map(async (h) => {
        await this.ask(h, (id) => ({ type: 'close', id }));
        h.child.disconnect();
        await h.exited;
      }),
    );
    await Promise.all(this.realClients.splice(0).map((a) => a.stop()));
    await Promise.all(this.servers.splice(0).map((a) => a.stop()));
  }

  /** Kills whatever still runs, then etcd. */
  async stop(): Promise<void> {
    for (const h of this.liveHosts.splice(0)) h.child.kill('SIGKILL');
    await Promise.all([...this.realClients.splice(0), ...this.servers.splice(0)].map((a) => a.kill()));
    this.proxy?.kill('SIGKILL');
    await this.etcd.stop();
  }
}

interface Host {
  readonly child: ChildProcess;
  readonly names: string[];
  readonly exited: Promise<void>;
}

/** etcd 3.4's `etcd grpc-proxy start` on a free loopback port, in front of the members. */
async function startGrpcProxy(etcd: EtcdCluster): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(
    await ensureEtcd(),
    ['grpc-proxy', 'start', `--endpoints=${etcd.endpoints.join(',')}`, `--listen-addr=${LOOPBACK}:${port}`],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (stderr = (stderr + c).slice(-4000)));
  let gone = false;
  child.once('exit', () => (gone = true));
  await waitForPort(port, 30_000, () => (gone ? `grpc-proxy exited: ${stderr}` : undefined));
  return { child, url: `http://${LOOPBACK}:${port}` };
}
