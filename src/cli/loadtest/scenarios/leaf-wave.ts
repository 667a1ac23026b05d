// `leaf-wave`: W services ask for their first leaf certificate at the same moment, as after a
// deploy or a restart of every proxy on a host: how long until all are issued, each one's wait,
// and how often the target's signing limit answered 429 (retried after Retry-After, as Consul's
// clients do).
import { ClientError } from '../../client/api.js';
import type { FlagSpecs } from '../../client/flags.js';
import { call, childAborter, clientSignal, pause } from '../http.js';
import type { RunContext, Scenario, ScenarioReport } from '../scenario.js';
import { Tally } from '../tally.js';
import { connectRoots } from './connect-roots.js';
import { crossCheck, delta, readMetrics } from '../target-metrics.js';

const flags: FlagSpecs = {
  services: {
    kind: 'int',
    doc: 'Services asking for their first leaf at once (default 200); -duration is how long the run waits for all of them.',
  },
};

/** Backoff after a 429 without Retry-After, jittered so that the retries do not come back as a wave. */
const RETRY_MS = 250;

async function run(ctx: RunContext): Promise<ScenarioReport> {
  const services = Math.max(1, Number(ctx.flags.services ?? 200));
  await connectRoots(ctx.api);
  const leafPath = (i: number): string => `/v1/agent/connect/ca/leaf/${ctx.prefix}-svc-${i}`;
  const probe = await ctx.api.call('GET', leafPath(0));
  if (probe.status === 403)
    throw new ClientError(
      'CLI_LOADTEST_TARGET',
      `The token may not fetch leaf certificates (service:write on ${ctx.prefix}-svc-*): ${probe.text.trim()}`,
    );
  if (probe.status === 404 || probe.status === 405)
    throw new ClientError(
      'CLI_LOADTEST_TARGET',
      'The target does not serve /v1/agent/connect/ca/leaf: is it an agent with Connect enabled?',
    );

  const aborter = childAborter(ctx.stop);
  const deadline = setTimeout(() => aborter.abort(), ctx.common.measureMs);
  const tally = new Tally();
  const before = await readMetrics(ctx.api);
  let rateLimited = 0;
  let issued = 0;
  let lastIssuedMs = 0;
  const targets = ctx.targets;
  const one = async (i: number, from: number): Promise<void> => {
    const target = targets[i % targets.length]!;
    const signal = clientSignal(aborter.signal);
    while (!signal.aborted) {
      const sent = performance.now();
      const r = await call(target, 'GET', leafPath(i + 1), ctx.headers, undefined, signal);
      if ('error' in r) {
        if (r.error !== 'aborted') tally.record(r, (performance.now() - sent) * 1000);
        if (r.error !== 'aborted') await pause(RETRY_MS, signal);
        continue;
      }
      if (r.reply.status === 429) {
        rateLimited++;
        // The target's intended throttling, retried after Retry-After: its own outcome, not an error.
        tally.record({ status: 429 }, (performance.now() - sent) * 1000, 'throttled', true);
        const after = Number(r.reply.headers.get('retry-after'));
        await pause(after > 0 ? after * 1000 : RETRY_MS * (0.5 + Math.random()), signal);
        continue;
      }
      // The latency of a leaf is the service's wait: from the wave's start to its certificate.
      const waited = performance.now() - from;
      tally.record({ status: r.reply.status }, waited * 1000, 'issued');
      if (r.reply.status === 200) {
        issued++;
        lastIssuedMs = Math.max(lastIssuedMs, waited);
        return;
      }
      await pause(RETRY_MS, signal);
    }
  };
  ctx.say(`${services} services ask for a leaf at once ...`);
  tally.start(ctx.progress);
  const from = performance.now();
  await Promise.all(Array.from({ length: services }, (_, i) => one(i, from)));
  clearTimeout(deadline);
  const { elapsedMs, cpuPct, clientBusy } = tally.finish();
  const after = await readMetrics(ctx.api);
  const targetLimited = delta(before, after, ['svc.connect.ca.leaf.rate_limited']);
  return {
    measured: { aggregate: tally.aggregate, warmupOk: 0, elapsedMs, cpuPct, threads: 1, clientBusy, askedRps: null },
    settings: { services, connections: services, mode: 'wave', rate: null },
    crossCheck: crossCheck('svc.connect.ca.leaf.issued', issued, delta(before, after, ['svc.connect.ca.leaf.issued'])),
    facts: [
      ['services issued', issued],
      ['all issued in ms', issued === services ? Math.round(lastIssuedMs) : null],
      ['throttled (429, retried after Retry-After)', rateLimited],
      ['throttled, as the target counted', targetLimited],
    ],
  };
}

export const leafWaveScenario: Scenario = {
  synopsis: "W services request their first leaf at once: time to all issued, each one's wait, 429 throttling",
  flags,
  unit: 'req/s',
  run,
};
