// Micro-bench for the in-process authorize decision (src/connect/authorize.ts over the index of
// src/connect/intentions/index.ts): agent.authorize() with 10,000 intentions over 1,000
// destinations (target: median <= 1 µs per decision), and the index rebuild after one write
// (target <= 50 ms). Beside it, in the same run, the old way: scan every intention, keep the
// destination's, sort by precedence, take the first source match.
// Run: node dist/bench/micro/authorize.js
import { createAgent, type Agent } from '../../src/agent.js';
import { buildIntentionIndex } from '../../src/connect/intentions/index.js';
import { INTENTIONS_TABLE, intentionKey, type StoredIntention } from '../../src/connect/intentions/model.js';
import { comparePrecedence, WILDCARD } from '../../src/connect/intentions/precedence.js';
import { normalizeIntention, storedIntention } from '../../src/connect/intentions/validate.js';
import { loadConfig } from '../../src/config/load.js';
import type { Row, WriteOp } from '../../src/state/types.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { formatMicro, measure, type MicroResult } from '../support/micro.js';
import { median } from '../support/stats.js';

export const NAMESPACES = 10;
export const DESTINATIONS = 1_000;
/** Per destination: 8 exact sources, its namespace's wildcard, and the all-namespaces wildcard. */
export const PER_DESTINATION = 10;

export const destinationName = (d: number): string => `svc-${d}`;
export const namespaceOf = (d: number): string => `ns-${d % NAMESPACES}`;

/** The 10,000 intentions: destination d gets src-0..7 (exact), ns/* and * /*, alternating actions. */
export function benchIntentions(): WriteOp[] {
  const ops: WriteOp[] = [];
  for (let d = 0; d < DESTINATIONS; d++) {
    const ns = namespaceOf(d);
    const sources: [string, string][] = [];
    for (let s = 0; s < PER_DESTINATION - 2; s++) sources.push([ns, `src-${s}`]);
    sources.push([ns, WILDCARD], [WILDCARD, WILDCARD]);
    sources.forEach(([sourceNS, sourceName], i) => {
      const value = storedIntention(
        normalizeIntention(
          { SourceNS: sourceNS, SourceName: sourceName, DestinationNS: ns, DestinationName: destinationName(d), Action: i % 2 === 0 ? 'allow' : 'deny' },
          'default',
        ),
      );
      ops.push({ op: 'set', table: INTENTIONS_TABLE, key: intentionKey(ns, destinationName(d), sourceNS, sourceName), value });
    });
  }
  return ops;
}

/** Requests that hit the first entry, the middle, the last (`*` / `*`), and a destination with none. */
export function benchRequests(): { Target: string; ClientCertURI: string; Namespace: string }[] {
  const out: { Target: string; ClientCertURI: string; Namespace: string }[] = [];
  for (let i = 0; i < 256; i++) {
    const d = (i * 37) % DESTINATIONS;
    const ns = namespaceOf(d);
    const kind = i % 4;
    const target = kind === 3 ? `unknown-${i}` : destinationName(d);
    const source = kind === 0 ? 'src-0' : kind === 1 ? 'src-5' : 'stranger';
    const sourceNs = kind === 2 ? 'other-ns' : ns;
    out.push({ Target: target, Namespace: ns, ClientCertURI: `spiffe://11111111-2222-3333-4444-555555555555.consul/ns/${sourceNs}/dc/dc1/svc/${source}` });
  }
  return out;
}

export async function seededAgent(): Promise<Agent> {
  const agent = await createAgent(loadConfig({ files: [], flags: {}, dev: true }));
  await agent.store.commit(benchIntentions());
  return agent;
}

/** The pre-index way: every intention scanned and the destination's sorted, per decision. */
function naiveDecide(rows: readonly Row<StoredIntention>[], ns: string, target: string, sourceNs: string, source: string): boolean {
  const applicable = rows
    .map((r) => r.value)
    .filter((x) => x.DestinationNS === WILDCARD || (x.DestinationNS === ns && (x.DestinationName === WILDCARD || x.DestinationName === target)))
    .sort(comparePrecedence);
  const hit = applicable.find((x) => (x.SourceNS === WILDCARD || x.SourceNS === sourceNs) && (x.SourceName === WILDCARD || x.SourceName === source));
  return hit === undefined ? true : hit.Action === 'allow';
}

export interface AuthorizeMicroReport {
  decisions: MicroResult[];
  rebuildAfterWriteMs: number;
  fullBuildMs: number;
  intentions: number;
}

export async function runAuthorizeMicro(): Promise<AuthorizeMicroReport> {
  const agent = await seededAgent();
  const requests = benchRequests();
  const rows = agent.store.list<StoredIntention>(INTENTIONS_TABLE, '');
  agent.intentions.current(); // built once before timing
  const decisions = [
    measure('agent.authorize() (10k intentions, 1k destinations)', (i) => agent.authorize(requests[i & 255] as (typeof requests)[number])),
    measure(
      'old way: scan + sort per decision',
      (i) => {
        const r = requests[i & 255] as (typeof requests)[number];
        return naiveDecide(rows, r.Namespace, r.Target, r.Namespace, 'src-5');
      },
      { iterations: 200, rounds: 5, warmup: 20 },
    ),
  ];

  // Rebuild after one write: the next read sees the table moved and builds the new snapshot.
  const samples: number[] = [];
  for (let i = 0; i < 21; i++) {
    await agent.store.commit([
      { op: 'set', table: INTENTIONS_TABLE, key: intentionKey('ns-0', 'svc-0', 'ns-0', 'src-0'), value: { ...(rows[0] as Row<StoredIntention>).value, Description: `w${i}` } },
    ]);
    const start = process.hrtime.bigint();
    agent.intentions.current();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const full: number[] = [];
  for (let i = 0; i < 7; i++) {
    const start = process.hrtime.bigint();
    buildIntentionIndex(agent.store.list<StoredIntention>(INTENTIONS_TABLE, ''), i);
    full.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  await agent.close();
  return { decisions, rebuildAfterWriteMs: median(samples), fullBuildMs: median(full), intentions: rows.length };
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    const r = await runAuthorizeMicro();
    const d = r.decisions[0] as MicroResult;
    process.stdout.write(`${formatMicro(r.decisions)}\n`);
    process.stdout.write(`decision median ${d.nsPerOp.toFixed(0)} ns (target <= 1000 ns: ${d.nsPerOp <= 1000 ? 'ok' : 'MISS'})\n`);
    process.stdout.write(
      `index rebuild after one write (${r.intentions} intentions): median ${r.rebuildAfterWriteMs.toFixed(2)} ms ` +
        `(target <= 50 ms: ${r.rebuildAfterWriteMs <= 50 ? 'ok' : 'MISS'}); full build from scratch ${r.fullBuildMs.toFixed(2)} ms\n`,
    );
  });
}
