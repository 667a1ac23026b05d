// `mesh`: load through a sidecar pair to an echo application: TCP to the client sidecar's upstream
// listener, mTLS to the echo sidecar, authorize, the application, the bytes back. New connections
// (one byte echoed per connection: connections per second) or long ones (-long: -chunk bytes
// echoed over and over on -connections held open: bytes per second). The pair is started here
// (mesh-pair.ts) unless -upstream names one already running.
import { randomBytes } from 'node:crypto';
import { ClientError } from '../../client/api.js';
import type { FlagSpecs } from '../../client/flags.js';
import { EchoChannel, ECHOED, REFUSED } from '../../../loadgen/echo-channel.js';
import type { HttpTarget } from '../../../loadgen/http-channel.js';
import { Pacer } from '../../../loadgen/pacer.js';
import { drive, epochClock } from '../../../loadgen/scheduler.js';
import type { Outcome } from '../../../loadgen/types.js';
import { pause } from '../http.js';
import type { RunContext, Scenario, ScenarioReport } from '../scenario.js';
import { Tally } from '../tally.js';
import { connectRoots } from './connect-roots.js';
import { startMeshPair, type MeshPair } from './mesh-pair.js';

const flags: FlagSpecs = {
  upstream: {
    kind: 'string',
    doc: 'host:port of an upstream listener already carried through a sidecar pair to an echo application: nothing is registered or started.',
  },
  long: {
    kind: 'bool',
    doc: 'Long connections: -connections held open, each echoing -chunk bytes again as soon as they are back (bytes per second); default a new connection per echoed byte (connections per second).',
  },
  chunk: { kind: 'int', doc: 'Bytes per exchange with -long (default 16384).' },
  deny: {
    kind: 'bool',
    doc: 'Run under a deny intention: every connection refused by the echo sidecar (the refused path measured).',
  },
};

/** How long the pair may take to carry its first connection (the client sidecar learns the echo sidecar's address). */
const READY_MS = 30_000;
const PROBE_EVERY_MS = 100;

/** The sidecars' refusal reasons (README, `-metrics-addr`) that are a failed or refused TLS handshake. */
const HANDSHAKE_REASONS = ['handshake', 'no-identity', 'trust-domain'];
const OTHER_REASONS = ['authorize-failed', 'local-app', 'upstream'];

/** `served` and `refused` outcomes: a refusal is the mesh's answer, not the generator's error. */
function kindOf(outcome: Outcome): string {
  return outcome === ECHOED ? 'served' : outcome === REFUSED ? 'refused' : '';
}

function upstreamFlag(value: unknown): HttpTarget | undefined {
  if (value === undefined) return undefined;
  const m = /^\[?([^\]]*)\]?:(\d+)$/.exec(String(value));
  if (m === null || m[1] === '')
    throw new ClientError(
      'CLI_LOADTEST_FLAG',
      `invalid value ${JSON.stringify(value)} for flag -upstream: expected host:port, such as 127.0.0.1:9191`,
    );
  return { host: m[1] as string, port: Number(m[2]) };
}

/** Connects to the upstream listener until a connection ends as `wanted` (the pair carries, or refuses, as the intention says). */
async function probeUntil(target: HttpTarget, wanted: Outcome, stop: AbortSignal): Promise<void> {
  const giveUp = performance.now() + READY_MS;
  let last: Outcome = { error: 'none' };
  while (!stop.aborted) {
    last = await new EchoChannel(target, Buffer.from('.'), false, READY_MS).send();
    if (last === wanted) return;
    if (performance.now() > giveUp) break;
    await pause(PROBE_EVERY_MS, stop);
  }
  if (stop.aborted) return;
  throw new ClientError(
    'CLI_LOADTEST_TARGET',
    `The upstream listener ${target.host}:${target.port} did not ${wanted === ECHOED ? 'echo' : 'refuse'} a connection within ${READY_MS / 1000} s (the last ended ${'error' in last ? last.error : 'echoed'})`,
  );
}

async function run(ctx: RunContext): Promise<ScenarioReport> {
  if (ctx.common.findMax) throw new ClientError('CLI_LOADTEST_FLAG', 'mesh takes -rate or -stages, not -find-max');
  const given = upstreamFlag(ctx.flags.upstream);
  const long = ctx.flags.long === true;
  const deny = ctx.flags.deny === true;
  const chunk = Number(ctx.flags.chunk ?? 16_384);
  if (!(chunk >= 1)) throw new ClientError('CLI_LOADTEST_FLAG', '-chunk must be at least 1');
  if (given !== undefined && deny)
    throw new ClientError(
      'CLI_LOADTEST_FLAG',
      '-deny writes the intention of a pair the run starts: not with -upstream',
    );
  let pair: MeshPair | undefined;
  if (given === undefined) {
    await connectRoots(ctx.api);
    pair = await startMeshPair(ctx.api, ctx.prefix, ctx.say);
  }
  try {
    const target = given ?? pair!.upstream;
    if (pair !== undefined) {
      await probeUntil(target, ECHOED, ctx.stop);
      if (deny) {
        await pair.intention('deny');
        await probeUntil(target, REFUSED, ctx.stop);
      }
      ctx.say(`the pair carries connections: load on ${target.host}:${target.port}${deny ? ' (denied)' : ''}`);
    }
    const report = await measure(ctx, target, long ? randomBytes(chunk) : randomBytes(1), long, pair);
    const stuck = pair === undefined ? [] : await pair.close();
    pair = undefined;
    return {
      ...report,
      facts: [...(report.facts ?? []), ['proxies that did not exit on SIGTERM (killed)', stuck.length]],
    };
  } finally {
    await pair?.close();
  }
}

async function measure(
  ctx: RunContext,
  target: HttpTarget,
  payload: Buffer,
  long: boolean,
  pair: MeshPair | undefined,
): Promise<ScenarioReport> {
  const { common } = ctx;
  const channels = Array.from({ length: common.connections }, () => new EchoChannel(target, payload, long));
  const stopped = (): boolean => ctx.stop.aborted;
  let warmupServed = 0;
  const first = common.stages?.[0]?.rate;
  const warmupFrom = epochClock.now();
  await drive({
    channels,
    pacer: first === undefined ? undefined : new Pacer([{ ms: common.warmupMs, rate: first }]),
    until: warmupFrom + common.warmupMs,
    clock: epochClock,
    record: (o) => {
      if (o === ECHOED) warmupServed++;
    },
    stopped,
  });
  const tally = new Tally();
  const acceptedBefore = pair?.accepted() ?? 0;
  const refusedBefore = await pair?.refusals();
  tally.start(ctx.progress);
  const pacer = common.stages === undefined ? undefined : new Pacer(common.stages);
  const from = epochClock.now();
  await drive({
    channels,
    pacer,
    from,
    until: from + (pacer?.totalMs ?? common.measureMs),
    clock: epochClock,
    record: (o, us, late) => {
      tally.record(o, us, kindOf(o), o === REFUSED, late);
    },
    dropped: (n) => tally.dropped(n),
    stopped,
  });
  const { elapsedMs, cpuPct, clientBusy } = tally.finish();
  const accepted = (pair?.accepted() ?? 0) - acceptedBefore;
  const refusedAfter = await pair?.refusals();
  const refusedFor = (...reasons: string[]): number | null =>
    refusedAfter === undefined
      ? null
      : reasons.reduce((sum, r) => sum + (refusedAfter.get(r) ?? 0) - (refusedBefore?.get(r) ?? 0), 0);
  for (const c of channels) c.close();
  const served = tally.aggregate.outcomes.get('served')?.requests ?? 0;
  const mbPerSecond = Math.round(((served * payload.length) / elapsedMs / 1000) * 100) / 100;
  return {
    measured: {
      aggregate: tally.aggregate,
      warmupOk: warmupServed,
      elapsedMs,
      cpuPct,
      threads: 1,
      clientBusy,
      askedRps: pacer === undefined ? null : Math.round((pacer.total / pacer.totalMs) * 1000),
      stages: common.stages ?? null,
    },
    settings: {
      connectionMode: long ? 'long' : 'new',
      payloadBytes: payload.length,
      deny: ctx.flags.deny === true,
      upstream: `${target.host}:${target.port}`,
      app: pair?.app ?? null,
      client: pair?.client ?? null,
      proxyPids: pair?.pids ?? [],
    },
    // The sidecar asks authorize once per client while the intentions stand (README, "Connect SDK"), so
    // the agent's count is no count of connections: the application's accepted count is the check.
    crossCheck: null,
    facts: [
      long
        ? ['echoed MB/s (each way)', mbPerSecond]
        : ['connections the echo application accepted', pair === undefined ? null : accepted],
      ['proxies started', pair === undefined ? 0 : pair.pids.length],
      // What a `refused` connection was, from the sidecars' own counts (the client sees a closed connection either way).
      ['refused by intention (sidecars)', refusedFor('denied')],
      ['handshake failures (sidecars)', refusedFor(...HANDSHAKE_REASONS)],
      ['refused otherwise (sidecars: authorize failed, application or mesh unreachable)', refusedFor(...OTHER_REASONS)],
    ],
  };
}

export const meshScenario: Scenario = {
  synopsis:
    'Through a sidecar pair to an echo application: new connections per second, or bytes per second over long ones (-long)',
  flags,
  unit: 'connections/s',
  unitOf: (f) => (f.long === true ? 'exchanges/s' : 'connections/s'),
  openLoop: true,
  run,
};
