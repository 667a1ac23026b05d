// Where a service's mesh material comes from: its leaf and the roots (kept current by blocking
// queries), the authorize decision for each inbound connection, and the healthy instances of a
// service to dial (blocking-watched from the first dial). Here over the agent's HTTP API; a failed
// read is tried again with a backoff, and the last good value stays in use meanwhile: the held
// leaf and roots serve until they expire, the held instances are dialled, and a client the agent
// authorized before keeps its last decision while the agent cannot be reached (README, "Connect SDK").
// A decision is asked once per client until the target's intentions change (their match list is
// blocking-watched, as Consul's agent caches intention matches), or for at most DECISION_TTL_MS.
import { LRUCache } from 'lru-cache';
import { AgentClient, type AgentAddress } from './agent-client.js';
import { watchPath, type Unwatch } from './blocking-watch.js';

export interface Leaf {
  readonly certPem: string;
  readonly keyPem: string;
  readonly serviceUri: string;
  readonly serial: string;
  readonly validBefore: Date;
}

export interface Roots {
  readonly trustDomain: string;
  /** Every root's certificate (and its intermediates), the old ones during a rotation included. */
  readonly pems: readonly string[];
}

export interface Instance {
  readonly address: string;
  readonly port: number;
}

export interface Decision {
  readonly authorized: boolean;
  readonly reason: string;
}

export interface MeshSource {
  watchLeaf(service: string, onLeaf: (leaf: Leaf) => void, onError: (err: Error) => void): Unwatch;
  watchRoots(onRoots: (roots: Roots) => void, onError: (err: Error) => void): Unwatch;
  authorize(target: string, clientUri: string, clientSerial: string): Promise<Decision>;
  /** Calls `onChange` each time the intentions that decide connections to `target` may have changed. */
  watchIntentions(target: string, onChange: () => void): Unwatch;
  /** The passing instances of `service` that accept mesh connections (Consul's health/connect). */
  instances(service: string): Promise<Instance[]>;
  close(): void;
}

/** Last decisions kept: one per (target, client) pair seen, the oldest dropped. */
const HELD_DECISIONS = 10_000;
/**
 * How long a decision is reused while the target's intentions stand: what else it rests on (the
 * ACL default, the token's rights) is asked again this often, as Consul's agent keeps a token 30 s.
 */
const DECISION_TTL_MS = 30_000;

interface HeldDecision extends Decision {
  /** The generation of the target's intentions it was asked under; -1 when they were not being watched. */
  readonly generation: number;
  readonly at: number;
}

/** A target's intention matches, watched: each answer (each change) starts a new generation. */
interface IntentionsWatch {
  generation: number;
  synced: boolean;
  readonly listeners: Set<() => void>;
}

export class HttpMeshSource implements MeshSource {
  private readonly client: AgentClient;
  private readonly stops = new Set<Unwatch>();
  private readonly decisions = new LRUCache<string, HeldDecision>({ max: HELD_DECISIONS });
  private readonly intentions = new Map<string, IntentionsWatch>();
  /** Each dialled service's watched instances: the first answer, then the last good one. */
  private readonly watched = new Map<string, { first: Promise<void>; instances: Instance[] }>();

  constructor(address: AgentAddress) {
    this.client = new AgentClient(address);
  }

  watchLeaf(service: string, onLeaf: (leaf: Leaf) => void, onError: (err: Error) => void): Unwatch {
    return this.watch(`/v1/agent/connect/ca/leaf/${encodeURIComponent(service)}`, onError, (body) => {
      const leaf = body as {
        CertPEM: string;
        PrivateKeyPEM: string;
        ServiceURI: string;
        SerialNumber: string;
        ValidBefore: string;
      };
      onLeaf({
        certPem: leaf.CertPEM,
        keyPem: leaf.PrivateKeyPEM,
        serviceUri: leaf.ServiceURI,
        serial: leaf.SerialNumber,
        validBefore: new Date(leaf.ValidBefore),
      });
    });
  }

  watchRoots(onRoots: (roots: Roots) => void, onError: (err: Error) => void): Unwatch {
    return this.watch('/v1/agent/connect/ca/roots', onError, (body) => {
      const roots = body as { TrustDomain: string; Roots: { RootCert: string; IntermediateCerts?: string[] | null }[] };
      onRoots({
        trustDomain: roots.TrustDomain,
        pems: roots.Roots.flatMap((r) => [r.RootCert, ...(r.IntermediateCerts ?? [])]),
      });
    });
  }

  async authorize(target: string, clientUri: string, clientSerial: string): Promise<Decision> {
    const pair = `${target}\n${clientUri}`;
    const watch = this.intentionsOf(target);
    const held = this.decisions.get(pair);
    const now = performance.now();
    // The target's intentions have not changed since: the agent would answer as it did.
    if (held !== undefined && watch.synced && held.generation === watch.generation && now - held.at < DECISION_TTL_MS)
      return { authorized: held.authorized, reason: held.reason };
    const generation = watch.synced ? watch.generation : -1;
    let res;
    try {
      res = await this.client.call('POST', '/v1/agent/connect/authorize', {
        Target: target,
        ClientCertURI: clientUri,
        ClientCertSerial: clientSerial,
      });
    } catch (err) {
      // The agent cannot be reached (not an answer of its): the last decision it gave for the pair stands.
      if (held !== undefined) return { authorized: held.authorized, reason: held.reason };
      throw err;
    }
    if (res.status !== 200) throw new Error(`authorize answered ${res.status}: ${res.body.trim()}`);
    const answer = JSON.parse(res.body) as { Authorized: boolean; Reason: string };
    const decision = { authorized: answer.Authorized, reason: answer.Reason };
    this.decisions.set(pair, { ...decision, generation, at: now });
    return decision;
  }

  /** The watch of `target`'s intention matches, started on its first authorize. */
  private intentionsOf(target: string): IntentionsWatch {
    let watch = this.intentions.get(target);
    if (watch === undefined) {
      const state: IntentionsWatch = (watch = { generation: 0, synced: false, listeners: new Set() });
      this.intentions.set(target, state);
      this.watch(
        `/v1/connect/intentions/match?by=destination&name=${encodeURIComponent(target)}`,
        () => {
          // Not watched now (the agent gone, or the token may not read them): every decision is asked.
          state.synced = false;
          state.generation++;
        },
        () => {
          state.generation++;
          state.synced = true;
          for (const listener of [...state.listeners]) listener();
        },
      );
    }
    return watch;
  }

  watchIntentions(target: string, onChange: () => void): Unwatch {
    const listeners = this.intentionsOf(target).listeners;
    listeners.add(onChange);
    return () => listeners.delete(onChange);
  }

  async instances(service: string): Promise<Instance[]> {
    let entry = this.watched.get(service);
    if (entry === undefined) {
      let firstAnswer: () => void = () => undefined;
      let firstFailure: (err: Error) => void = () => undefined;
      const first = new Promise<void>((resolve, reject) => ((firstAnswer = resolve), (firstFailure = reject)));
      const held: { first: Promise<void>; instances: Instance[] } = { first, instances: [] };
      this.watched.set(service, (entry = held));
      const stop = this.watch(
        `/v1/health/connect/${encodeURIComponent(service)}?passing`,
        (err) => {
          // Never answered: the dial fails, and the next one starts the watch again.
          if (this.watched.get(service) === held && held.instances.length === 0) {
            this.watched.delete(service);
            stop();
            firstFailure(err);
          }
        },
        (body) => {
          const entries = body as { Node: { Address: string }; Service: { Address: string; Port: number } }[];
          held.instances = entries.map((e) => ({ address: e.Service.Address || e.Node.Address, port: e.Service.Port }));
          firstAnswer();
        },
      );
    }
    await entry.first;
    return entry.instances;
  }

  close(): void {
    for (const stop of [...this.stops]) stop();
    this.client.close();
  }

  /** Reads `path` and hands each new answer to `take`, then blocks on its index, until stopped. */
  private watch(path: string, onError: (err: Error) => void, take: (body: unknown) => void): Unwatch {
    const unwatch = watchPath(this.client, path, { by: 'index', onError, take });
    const stop = (): void => {
      unwatch();
      this.stops.delete(stop);
    };
    this.stops.add(stop);
    return stop;
  }
}
