// A host process of the scale harness: many agent instances (instance.ts) in one Node process, run
// by the harness over IPC (protocol.ts). It waits on conditions in every instance's view by the
// store's own watches, never by polling, and reports when each instance first held; it flips TTL
// checks on request or at a rate. Killed with SIGKILL, its instances crash as a real agent would.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Agent } from '../../src/index.js';
import { CATALOG_CHECKS, CATALOG_NODES, CATALOG_SERVICES } from '../../src/catalog/model.js';
import { INTENTIONS_TABLE } from '../../src/connect/intentions/model.js';
import { startInstance } from './instance.js';
import {
  checkId,
  wallMs,
  type Condition,
  type FromHost,
  type HostStats,
  type InstanceSpec,
  type ToHost,
} from './protocol.js';

/** A 'nodes' condition is checked at most this often per instance: it reads every node still missing. */
const NODES_RECHECK_MS = 100;
/**
 * An instance that fails to start is started again, as a supervisor restarts a real agent: on a
 * loaded host a timed-out call leaves a lone etcd member skipped while the client probes it, and
 * a start-up read in that span fails. The retries are counted in the stats.
 */
const START_ATTEMPTS = 10;
const START_RETRY_MS = 1_000;
/** How often the check churn ticks; each tick flips its share of the rate. */
const CHURN_TICK_MS = 100;

const instances: { readonly name: string; readonly agent: Agent }[] = [];
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();
let churn: NodeJS.Timeout | undefined;
let flips = 0;
let services = 0;
let heapBefore = 0;
let startRetries = 0;
let lastStartError = '';

function send(message: FromHost): void {
  process.send?.(message);
}

process.on('message', (message: ToHost) => {
  handle(message).catch((err: unknown) =>
    send({ type: 'error', id: message.id, message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
  );
});
// The harness gone (its IPC channel closed): nothing is left to report to.
process.on('disconnect', () => process.exit(0));

async function handle(message: ToHost): Promise<void> {
  switch (message.type) {
    case 'start': {
      const { spec } = message;
      services = spec.services;
      heapBefore = process.memoryUsage().heapUsed;
      const queue = [...spec.names];
      const worker = async (): Promise<void> => {
        for (let name = queue.shift(); name !== undefined; name = queue.shift())
          instances.push({ name, agent: await startWithRetries(spec, name) });
      };
      await Promise.all(Array.from({ length: Math.max(1, spec.startConcurrency) }, worker));
      send({ type: 'ok', id: message.id });
      return;
    }
    case 'await': {
      const waits = instances.map(({ agent }) => awaitOne(agent, message.condition, message.limitMs));
      send({ type: 'ok', id: message.armedId });
      send({ type: 'arrivals', id: message.id, arrivals: await Promise.all(waits) });
      return;
    }
    case 'flip': {
      const instance = instances.find((i) => i.name === message.node);
      if (instance === undefined) throw new Error(`no instance ${message.node} here`);
      const at = wallMs();
      await instance.agent.local.updateTtl(message.checkId, message.status, `set by the scale harness at ${at}`);
      send({ type: 'ok', id: message.id, at });
      return;
    }
    case 'churn-checks':
      startChurn(message.perSecond);
      send({ type: 'ok', id: message.id });
      return;
    case 'stats':
      send({ type: 'stats', id: message.id, stats: stats() });
      return;
    case 'close':
      startChurn(0);
      await Promise.all(instances.splice(0).map((i) => i.agent.close()));
      send({ type: 'ok', id: message.id });
      return;
  }
}

async function startWithRetries(spec: InstanceSpec, name: string): Promise<Agent> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startInstance(spec, name);
    } catch (err) {
      if (attempt >= START_ATTEMPTS) throw err;
      startRetries++;
      lastStartError = causes(err);
      process.stderr.write(`scale host: ${name} failed to start (attempt ${attempt}): ${lastStartError}\n`);
      await new Promise((r) => setTimeout(r, START_RETRY_MS * attempt));
    }
  }
}

/** The error and its causes in one line: `No cluster leader` alone does not say which etcd call failed, or how. */
function causes(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err; e !== undefined && parts.length < 4; e = (e as { cause?: unknown }).cause) {
    parts.push(e instanceof Error ? e.message : String(e));
  }
  return parts.join(' <- ');
}

function stats(): HostStats {
  const memory = process.memoryUsage();
  let viewEvents = 0;
  let resyncs = 0;
  for (const { agent } of instances) {
    const s = agent.store.stats;
    if (s.backend !== 'etcd') continue;
    viewEvents += s.viewEvents;
    resyncs += s.resyncs;
  }
  const p99 = loopDelay.percentile(99) / 1e6;
  loopDelay.reset();
  return {
    instances: instances.length,
    heapUsed: memory.heapUsed,
    heapBefore,
    startRetries,
    lastStartError,
    rss: memory.rss,
    loopDelayP99Ms: p99,
    flips,
    viewEvents,
    resyncs,
  };
}

function startChurn(perSecond: number): void {
  clearInterval(churn);
  churn = undefined;
  if (perSecond <= 0 || instances.length === 0 || services === 0) return;
  let owed = 0;
  churn = setInterval(() => {
    for (owed += (perSecond * CHURN_TICK_MS) / 1000; owed >= 1; owed--) {
      const instance = instances[Math.floor(Math.random() * instances.length)];
      const id = checkId(Math.floor(Math.random() * services));
      const check = instance?.agent.local.state.check(id);
      if (instance === undefined || check === undefined) continue;
      flips++;
      const next = check.status === 'passing' ? 'warning' : 'passing';
      void instance.agent.local.updateTtl(id, next, 'scale harness churn').catch(() => undefined);
    }
  }, CHURN_TICK_MS);
}

/** Watches `agent`'s view until it holds `condition`: when it first did, or undefined past `limitMs`. */
function awaitOne(agent: Agent, condition: Condition, limitMs: number): Promise<number | undefined> {
  const holds = holder(agent, condition);
  const tables = WATCHED[condition.kind];
  const recheckMs = condition.kind === 'nodes' ? NODES_RECHECK_MS : 0;
  return new Promise((done) => {
    if (holds()) return done(wallMs());
    const cancels = new Map<string, () => void>();
    let pending: NodeJS.Timeout | undefined;
    const finish = (at: number | undefined): void => {
      clearTimeout(limit);
      clearTimeout(pending);
      for (const cancel of cancels.values()) cancel();
      cancels.clear();
      done(at);
    };
    const limit = setTimeout(() => finish(undefined), limitMs);
    const check = (): void => {
      pending = undefined;
      if (holds()) finish(wallMs());
    };
    const arm = (table: string): void => {
      cancels.set(
        table,
        agent.store.watchOnce({ table }, () => {
          arm(table);
          if (recheckMs === 0) check();
          else pending ??= setTimeout(check, recheckMs);
        }),
      );
    };
    tables.forEach(arm);
  });
}

/** The tables whose changes can make each kind of condition hold. */
const WATCHED: Record<Condition['kind'], readonly string[]> = {
  nodes: [CATALOG_NODES, CATALOG_SERVICES],
  intention: [INTENTIONS_TABLE],
  check: [CATALOG_CHECKS],
};

/** Whether the view holds `condition` now; a 'nodes' one remembers the names already seen. */
function holder(agent: Agent, condition: Condition): () => boolean {
  switch (condition.kind) {
    case 'nodes': {
      const missing = new Set(condition.names);
      return () => {
        for (const name of missing)
          if (agent.catalog.node(name) !== undefined && agent.catalog.nodeServices(name).length >= condition.services)
            missing.delete(name);
        return missing.size === 0;
      };
    }
    case 'intention':
      return () =>
        agent.intentions
          .destinationRows('default', condition.destination)
          .some((r) => r.value.SourceName === condition.source && r.value.Action === condition.action);
    case 'check': {
      const pending = new Set(condition.nodes);
      return () => {
        for (const node of pending)
          if (
            agent.catalog
              .nodeChecks(node)
              .some((r) => r.value.CheckID === condition.checkId && r.value.Status === condition.status)
          )
            pending.delete(node);
        return pending.size === 0;
      };
    }
  }
}
