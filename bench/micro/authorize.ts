// Micro-bench for the in-process authorize decision (src/connect/authorize.ts over the index of
// src/connect/intentions/index.ts): agent.authorize() with 10,000 intentions over 1,000
// destinations (target: median <= 1 µs per decision), and the index rebuild after one write
// (target <= 50 ms). A destination called by 1,000 sources (a shared database) decides at the
// cost of one with 10: its exact sources are looked up by name. Beside it, in the same run, the
// old way: scan every intention, keep the destination's, sort by precedence, take the first
// source match. And the HTTP route's work without the socket (parse phase, guard, decision,
// reply): one body over and over against 10,000 distinct bodies. Instruction counts of the same,
// through the request flow: bench/micro/authorize-calls.ts.
// Run: node dist/bench/micro/authorize.js
import { createHash } from 'node:crypto';
import { createAgent, type Agent } from '../../src/agent/index.js';
import { decide } from '../../src/connect/authorize.js';
import { buildIntentionIndex, type IntentionIndex } from '../../src/connect/intentions/index.js';
import { INTENTIONS_TABLE, intentionKey, type StoredIntention } from '../../src/connect/intentions/model.js';
import { comparePrecedence, WILDCARD } from '../../src/connect/intentions/precedence.js';
import { normalizeIntention, storedIntention } from '../../src/connect/intentions/validate.js';
import type { SpiffeService } from '../../src/connect/spiffe.js';
import { loadConfig } from '../../src/config/load.js';
import { systemClock } from '../../src/core/clock.js';
import { Metrics } from '../../src/core/metrics.js';
import { aclGate } from '../../src/http/api.js';
import { authorizeRoutes } from '../../src/http/handlers/authorize.js';
import { ApiRequest } from '../../src/http/request.js';
import { compileRoutes, type RequestHandler } from '../../src/http/routes.js';
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
          {
            SourceNS: sourceNS,
            SourceName: sourceName,
            DestinationNS: ns,
            DestinationName: destinationName(d),
            Action: i % 2 === 0 ? 'allow' : 'deny',
          },
          'default',
        ),
      );
      ops.push({
        op: 'set',
        table: INTENTIONS_TABLE,
        key: intentionKey(ns, destinationName(d), sourceNS, sourceName),
        value,
      });
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
    out.push({
      Target: target,
      Namespace: ns,
      ClientCertURI: `spiffe://11111111-2222-3333-4444-555555555555.consul/ns/${sourceNs}/dc/dc1/svc/${source}`,
    });
  }
  return out;
}

/** One decision that matches an exact intention (precedence 9, a deny) among 10,000. */
export const AUTHORIZE_BODY = JSON.stringify({
  Target: 'svc-5',
  Namespace: 'ns-5',
  ClientCertURI: 'spiffe://11111111-2222-3333-4444-555555555555.consul/ns/ns-5/dc/dc1/svc/src-5',
  ClientCertSerial: '3e:9d:0c:11:62:aa:4f:30',
});
/**
 * 10,000 distinct bodies, one per (destination, caller) of the 10,000 intentions: each destination
 * is called by its 8 exact sources, by a source only its namespace wildcard covers, and by one
 * from another namespace (the `*`/`*` intention), each client certificate with its own serial.
 * Consecutive bodies name different destinations, as independent proxies' calls interleave.
 * Another `round` gives the same pairs with other serials: the same proxies with new certificates.
 */
export function distinctAuthorizeBodies(round = 0): string[] {
  const bodies: string[] = [];
  for (let i = 0; i < DESTINATIONS * PER_DESTINATION; i++) {
    const caller = Math.floor(i / DESTINATIONS);
    // 7 is prime to 1,000, so each block of 1,000 bodies visits every destination once.
    const d = ((i % DESTINATIONS) * 7) % DESTINATIONS;
    const ns = namespaceOf(d);
    const source = caller < PER_DESTINATION - 2 ? `src-${caller}` : `client-${i % 97}`;
    const sourceNs = caller === PER_DESTINATION - 1 ? namespaceOf(d + 1) : ns;
    const serial = (
      createHash('sha1')
        .update(round === 0 ? String(i) : `${round}/${i}`)
        .digest('hex')
        .slice(0, 16)
        .match(/../g) as string[]
    ).join(':');
    bodies.push(
      JSON.stringify({
        Target: destinationName(d),
        Namespace: ns,
        ClientCertURI: `spiffe://11111111-2222-3333-4444-555555555555.consul/ns/${sourceNs}/dc/dc1/svc/${source}`,
        ClientCertSerial: serial,
      }),
    );
  }
  return bodies;
}

/** The compiled POST handler of the authorize route over the agent's intentions, ACLs as configured. */
function authorizeRouteHandler(agent: Agent): RequestHandler {
  const routes = authorizeRoutes({
    intentions: agent.intentions,
    connectEnabled: true,
    cacheMaxEntries: agent.config.cache.maxEntries,
    metrics: new Metrics(systemClock),
  });
  const handler = compileRoutes(
    routes,
    aclGate(agent.acl, () => undefined),
    1 << 20,
  )[0]?.handlers.get('POST');
  if (handler === undefined) throw new Error('no POST handler on the authorize route');
  return handler;
}

function postRequest(body: string): ApiRequest {
  const head = {
    method: 'POST',
    path: '/v1/agent/connect/authorize',
    rawQuery: '',
    tokenHeader: '',
    authorization: '',
    namespaceHeader: '',
    closeConnection: false,
  };
  return new ApiRequest(head, '', Buffer.from(body));
}

export async function seededAgent(): Promise<Agent> {
  const agent = await createAgent(loadConfig({ files: [], flags: {}, dev: true }));
  await agent.store.commit(benchIntentions());
  return agent;
}

/** The pre-index way: every intention scanned and the destination's sorted, per decision. */
function naiveDecide(
  rows: readonly Row<StoredIntention>[],
  ns: string,
  target: string,
  sourceNs: string,
  source: string,
): boolean {
  const applicable = rows
    .map((r) => r.value)
    .filter(
      (x) =>
        x.DestinationNS === WILDCARD ||
        (x.DestinationNS === ns && (x.DestinationName === WILDCARD || x.DestinationName === target)),
    )
    .sort(comparePrecedence);
  const hit = applicable.find(
    (x) =>
      (x.SourceNS === WILDCARD || x.SourceNS === sourceNs) && (x.SourceName === WILDCARD || x.SourceName === source),
  );
  return hit === undefined ? true : hit.Action === 'allow';
}

/** One destination (`default/db`) with an intention from each of `sources` services, and their clients. */
function sharedDestination(sources: number): { index: IntentionIndex; clients: SpiffeService[] } {
  const rows: Row<StoredIntention>[] = [];
  const clients: SpiffeService[] = [];
  for (let s = 0; s < sources; s++) {
    const name = `caller-${s}`;
    const value = storedIntention(
      normalizeIntention(
        { SourceName: name, DestinationName: 'db', Action: s % 2 === 0 ? 'allow' : 'deny' },
        'default',
      ),
    );
    rows.push({ key: intentionKey('default', 'db', 'default', name), value, createIndex: s + 1, modifyIndex: s + 1 });
    clients.push({
      kind: 'service',
      host: 'td',
      partition: 'default',
      namespace: 'default',
      datacenter: 'dc1',
      service: name,
    });
  }
  return { index: buildIntentionIndex(rows, sources), clients };
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
    measure('agent.authorize() (10k intentions, 1k destinations)', (i) =>
      agent.authorize(requests[i & 255] as (typeof requests)[number]),
    ),
    measure(
      'old way: scan + sort per decision',
      (i) => {
        const r = requests[i & 255] as (typeof requests)[number];
        return naiveDecide(rows, r.Namespace, r.Target, r.Namespace, 'src-5');
      },
      { iterations: 200, rounds: 5, warmup: 20 },
    ),
  ];
  for (const sources of [10, 1_000]) {
    const { index, clients } = sharedDestination(sources);
    decisions.push(
      measure(`decide(): one destination, ${sources.toLocaleString('en-US')} sources`, (i) =>
        decide(index, 'default', 'db', clients[i % sources] as SpiffeService, false),
      ),
    );
  }
  // The adapter builds one ApiRequest per request; here they are built ahead, so only the route's work is timed.
  const route = authorizeRouteHandler(agent);
  const one = Array.from({ length: 256 }, () => postRequest(AUTHORIZE_BODY));
  const distinct = distinctAuthorizeBodies().map(postRequest);
  decisions.push(
    measure('HTTP route, one body', (i) => route(one[i & 255] as ApiRequest)),
    measure('HTTP route, 10,000 distinct bodies', (i) => route(distinct[i % distinct.length] as ApiRequest)),
  );

  // Rebuild after one write: the next read sees the table moved and builds the new snapshot.
  const samples: number[] = [];
  for (let i = 0; i < 21; i++) {
    await agent.store.commit([
      {
        op: 'set',
        table: INTENTIONS_TABLE,
        key: intentionKey('ns-0', 'svc-0', 'ns-0', 'src-0'),
        value: { ...(rows[0] as Row<StoredIntention>).value, Description: `w${i}` },
      },
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
    process.stdout.write(
      `decision median ${d.nsPerOp.toFixed(0)} ns (target <= 1000 ns: ${d.nsPerOp <= 1000 ? 'ok' : 'MISS'})\n`,
    );
    process.stdout.write(
      `index rebuild after one write (${r.intentions} intentions): median ${r.rebuildAfterWriteMs.toFixed(2)} ms ` +
        `(target <= 50 ms: ${r.rebuildAfterWriteMs <= 50 ? 'ok' : 'MISS'}); full build from scratch ${r.fullBuildMs.toFixed(2)} ms\n`,
    );
  });
}
