// Heap per registered instance in a real agent: instances registered through /v1/catalog/register
// in steps (1,000, 10,000, 50,000 by default), ten to a node as in a mesh of 5,000 nodes and
// 50,000 instances, each with a service check; after each step the agent runs two full collections
// and reports process.memoryUsage() (support/heap-probe.ts, preloaded). The figure is heapUsed's
// growth over the empty agent, per instance; the render cache is empty then (no reads), and adds
// at most its bound (src/http/render-cache.ts) once reads fill it.
// Run: node dist/bench/probes/catalog-heap.js [--steps 1000,10000,50000]
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { AGENT_MISSING, agentBuilt } from '../support/agent.js';
import { spawnServer, type ServerProcess } from '../support/child.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { AGENT_MAIN, BENCH_OUT } from '../support/paths.js';
import { freePort } from '../support/ports.js';
import { formatTable, round, writeJson } from '../support/report.js';

const DEFAULT_STEPS = [1_000, 10_000, 50_000];
const INSTANCES_PER_NODE = 10;
// Registrations in flight: enough to hide the round trip, few enough not to queue.
const REGISTER_IN_FLIGHT = 16;
const PROBE = new URL('../support/heap-probe.js', import.meta.url).pathname;

interface MemoryUsage {
  readonly rss: number;
  readonly heapUsed: number;
  readonly heapTotal: number;
  readonly external: number;
  readonly arrayBuffers: number;
}

/** Instance `i`: service `svc-<i % 100>` on node `mesh-<i / 10>`, with its own passing check. */
function registration(i: number): unknown {
  const node = Math.floor(i / INSTANCES_PER_NODE);
  return {
    Node: `mesh-${node}`,
    Address: `10.${node >> 16}.${(node >> 8) & 255}.${node & 255}`,
    NodeMeta: { rack: `r${node % 8}` },
    Service: {
      ID: `svc-${i}`,
      Service: `svc-${i % 100}`,
      Tags: ['v1'],
      Port: 8080 + (i % INSTANCES_PER_NODE),
      Meta: { version: '1' },
      Connect: { Native: true },
    },
    Check: { CheckID: `svc-${i}-http`, Name: 'http', ServiceID: `svc-${i}`, Status: 'passing', Output: 'HTTP 200' },
  };
}

async function registerRange(port: number, from: number, to: number): Promise<void> {
  let next = from;
  const worker = async (): Promise<void> => {
    for (let i = next++; i < to; i = next++) {
      const res = await fetch(`http://127.0.0.1:${port}/v1/catalog/register`, {
        method: 'PUT',
        body: JSON.stringify(registration(i)),
      });
      if (res.status !== 200) throw new Error(`register ${i}: ${res.status} ${await res.text()}`);
    }
  };
  await Promise.all(Array.from({ length: REGISTER_IN_FLIGHT }, worker));
}

/** Asks the agent for its memory after two full collections; waits for the file it writes. */
async function heapOf(agent: ServerProcess, file: string): Promise<MemoryUsage> {
  await rm(file, { force: true });
  process.kill(agent.pid, 'SIGUSR2');
  for (;;) {
    try {
      return JSON.parse(await readFile(file, 'utf8')) as MemoryUsage;
    } catch {
      await sleep(50); // Not written yet (or half written): the probe writes it within a GC's time.
    }
  }
}

export async function runCatalogHeapBench(argv: readonly string[]): Promise<Record<string, unknown>> {
  if (!agentBuilt()) throw new Error(AGENT_MISSING);
  const { values } = parseArgs({ args: [...argv], options: { steps: { type: 'string' } } });
  const steps = values.steps === undefined ? DEFAULT_STEPS : values.steps.split(',').map(Number);
  const file = join(BENCH_OUT, `heap-probe-${process.pid}.json`);
  const port = await freePort();
  const agent = await spawnServer({
    name: 'agent (dev, heap probe)',
    args: ['--import', PROBE, AGENT_MAIN, 'agent', '-dev', '-http-port', String(port), '-log-level', 'warn'],
    port,
    env: { HEAP_PROBE_FILE: file },
  });
  const rows: { instances: number; heapUsedMiB: number; perInstanceB: number; stepPerInstanceB: number }[] = [];
  let empty: MemoryUsage | undefined;
  try {
    // One registration and its deregistration first, so the code every write runs is compiled.
    await registerRange(port, 0, 1);
    await fetch(`http://127.0.0.1:${port}/v1/catalog/deregister`, {
      method: 'PUT',
      body: JSON.stringify({ Node: 'mesh-0' }),
    });
    const base = await heapOf(agent, file);
    empty = base;
    let registered = 0;
    let previous = base;
    for (const step of steps) {
      const started = performance.now();
      await registerRange(port, registered, step);
      process.stderr.write(`  ${step} instances (${Math.round(performance.now() - started)} ms to register)\n`);
      const now = await heapOf(agent, file);
      rows.push({
        instances: step,
        heapUsedMiB: now.heapUsed / 2 ** 20,
        perInstanceB: (now.heapUsed - base.heapUsed) / step,
        stepPerInstanceB: (now.heapUsed - previous.heapUsed) / (step - registered),
      });
      registered = step;
      previous = now;
    }
  } finally {
    await agent.stop();
    await rm(file, { force: true });
  }
  const table = formatTable(
    ['instances', 'heapUsed MiB', 'B/instance over empty', 'B/instance of this step'],
    rows.map((r) => [r.instances, round(r.heapUsedMiB), round(r.perInstanceB), round(r.stepPerInstanceB)]),
  );
  process.stdout.write(
    `\nheap per registered instance (${INSTANCES_PER_NODE} a node, a check each; empty agent ` +
      `${round((empty?.heapUsed ?? Number.NaN) / 2 ** 20)} MiB after GC)\n${table}\n`,
  );
  const report = { instancesPerNode: INSTANCES_PER_NODE, emptyHeapUsed: empty?.heapUsed, rows };
  process.stdout.write(`wrote ${await writeJson('catalog-heap', report)}\n`);
  return report;
}

if (isEntryPoint(import.meta.url)) runMain(async () => void (await runCatalogHeapBench(process.argv.slice(2))));
