// `proxies`: P simulated sidecar proxies, each holding a blocking read of the CA roots and of its
// own leaf and asking authorize for every new inbound connection. During the run it flips an
// intention that every proxy's callers match, and (with -allow-writes) rotates the CA, and
// measures how long until each proxy saw each change: its authorize answer flipped, it held the
// new roots, it held a leaf signed by the new root.
import { generateKeyPairSync, X509Certificate, type KeyObject } from 'node:crypto';
import { ClientError, unexpectedAnswer, type Target } from '../../client/api.js';
import { exactIntentionPath } from '../../client/intention.js';
import type { FlagSpecs } from '../../client/flags.js';
import { ChannelPool } from '../../../loadgen/channel-pool.js';
import { HttpChannel, httpRequest } from '../../../loadgen/http-channel.js';
import { childAborter, clientSignal, hostPortOf, pause } from '../http.js';
import { durationFlag, rateFlag } from '../flag-values.js';
import type { Marker, Propagation, RunContext, Scenario, ScenarioReport } from '../scenario.js';
import { Tally } from '../tally.js';
import { connectRoots, type CaRoots } from './connect-roots.js';
import { crossCheck, delta, readMetrics } from '../target-metrics.js';

const flags: FlagSpecs = {
  proxies: { kind: 'int', doc: 'Simulated sidecar proxies, one service each (default 1000).' },
  'inbound-rate': {
    kind: 'string',
    doc: 'New inbound connections per second per proxy, each one authorize call (default 1), sent over -connections keep-alive connections to each target.',
  },
  changes: {
    kind: 'int',
    doc: 'Intention changes written during the run (default 3); each flips the answer every proxy gets.',
  },
  'allow-writes': {
    kind: 'bool',
    doc: "Also rotate the target's CA during the run (a new root for every service of the target: never by default).",
  },
  'rotation-timeout': {
    kind: 'string',
    doc: 'How long to wait for every proxy to hold a leaf of the new root (default 2m).',
  },
};

interface ProxyState {
  readonly service: string;
  readonly signal: AbortSignal;
  /** Aborted when the inbound calls end, before the blocking reads do. */
  readonly inboundSignal: AbortSignal;
  readonly target: Target;
  leaf: X509Certificate | undefined;
  activeRootId: string | undefined;
  /** When this proxy saw change k (ms after its write began). */
  readonly changeSeen: (number | undefined)[];
  rootsSeen: number | undefined;
  leafSeen: number | undefined;
}

interface Change {
  readonly authorized: boolean;
  readonly writeStart: number;
  ack: number;
  /** Answers with the old decision to calls sent after the ack. */
  staleAfterAck: number;
  /** The first answer with the new decision to a call sent after the ack (ms, performance.now()). */
  firstNewAfterAck: number | undefined;
}

/** How long a blocking read waits at the target before it answers unchanged. */
const BLOCKING_WAIT_MS = 60_000;

/** The decision in an authorize answer; a body that does not parse counts as a deny. */
function authorizedIn(body: Buffer | undefined): boolean {
  try {
    return (JSON.parse(body?.toString() ?? '{}') as { Authorized?: unknown }).Authorized === true;
  } catch {
    return false;
  }
}

const firstCert = (pem: string): X509Certificate =>
  new X509Certificate(pem.slice(0, pem.indexOf('-----END CERTIFICATE-----') + 25));

async function run(ctx: RunContext): Promise<ScenarioReport> {
  const count = Math.max(1, Number(ctx.flags.proxies ?? 1000));
  const inboundRate = rateFlag('inbound-rate', ctx.flags['inbound-rate'] ?? '1', 'connections', '2/s') as number;
  const changeCount = Number(ctx.flags.changes ?? 3);
  const rotate = ctx.flags['allow-writes'] === true;
  const rotationTimeoutMs = durationFlag('rotation-timeout', ctx.flags['rotation-timeout'], 120_000, '2m');

  const initialRoots = await connectRoots(ctx.api);
  const caller = `spiffe://${initialRoots.TrustDomain}/ns/default/dc/dc1/svc/${ctx.prefix}-caller`;
  const intentionPath = exactIntentionPath(`${ctx.prefix}-caller`, '*');
  const seeded = await ctx.api.call(
    'PUT',
    intentionPath,
    JSON.stringify({ Action: 'allow', Description: 'svc-agent loadtest proxies' }),
  );
  if (seeded.status === 403)
    throw new ClientError(
      'CLI_LOADTEST_TARGET',
      `The token may not write the run's intention (${ctx.prefix}-caller -> *: intentions write on every service): ${seeded.text.trim()}`,
    );
  if (seeded.status !== 200) throw unexpectedAnswer(seeded, 'seeding the intention');

  const aborter = childAborter(ctx.stop);
  const signal = aborter.signal;
  const tally = new Tally();
  const indexPattern = new RegExp(`\\r\\n${ctx.indexHeader}:\\s*(\\d+)`, 'i');
  // The inbound loops end first, after their call in flight, so that every answer the target counted is counted here too.
  const inboundStop = childAborter(ctx.stop);
  const changes: Change[] = [];
  let authorizedOk = 0;
  let warmupOk = 0;
  let rotationStart: number | undefined;
  let oldRootKey: KeyObject | undefined;
  const proxies: ProxyState[] = Array.from({ length: count }, (_, i) => ({
    service: `${ctx.prefix}-svc-${i}`,
    signal: clientSignal(signal),
    inboundSignal: clientSignal(inboundStop.signal),
    target: ctx.targets[i % ctx.targets.length]!,
    leaf: undefined,
    activeRootId: undefined,
    changeSeen: [],
    rootsSeen: undefined,
    leafSeen: undefined,
  }));
  const waitFor = async (what: () => boolean): Promise<void> => {
    while (!what() && !signal.aborted) await pause(20, signal);
  };

  // A blocking read held again as soon as it answers: the roots, or the proxy's leaf. Each on its own
  // connection with the generator's HTTP client: with fetch, 2,000 reads woken at once by a rotation
  // stalled the generator's event loop for a second, and the authorize latencies with it.
  const readers: HttpChannel[] = [];
  const hold = async (p: ProxyState, path: string, onAnswer: (text: string) => void): Promise<void> => {
    let request: Buffer = Buffer.alloc(0);
    const reader = new HttpChannel(hostPortOf(p.target), () => request, false, BLOCKING_WAIT_MS + 30_000, true);
    readers.push(reader);
    let index = 0;
    while (!p.signal.aborted) {
      request = httpRequest(
        'GET',
        `${path}${path.includes('?') ? '&' : '?'}index=${index}&wait=${BLOCKING_WAIT_MS / 1000}s`,
        ctx.headers,
      );
      const outcome = await reader.send();
      if (p.signal.aborted) return;
      if (!('status' in outcome) || outcome.status !== 200 || outcome.body === undefined) {
        await pause(200 + Math.random() * 300, p.signal);
        continue;
      }
      const next = Number(indexPattern.exec(outcome.head?.toString('latin1') ?? '')?.[1] ?? 0);
      try {
        onAnswer(outcome.body.toString());
      } catch {
        // An answer that is not the roots or a leaf (a proxy in front, a changed API): read again, as a proxy would.
        await pause(200 + Math.random() * 300, p.signal);
        continue;
      }
      index = next < index ? 0 : next;
    }
  };
  const onRoots =
    (p: ProxyState) =>
    (text: string): void => {
      const id = (JSON.parse(text) as CaRoots).ActiveRootID;
      if (rotationStart !== undefined && p.rootsSeen === undefined && id !== initialRoots.ActiveRootID)
        p.rootsSeen = performance.now() - rotationStart;
      p.activeRootId = id;
    };
  const onLeaf =
    (p: ProxyState) =>
    (text: string): void => {
      const leaf = firstCert((JSON.parse(text) as { CertPEM: string }).CertPEM);
      if (
        rotationStart !== undefined &&
        p.leafSeen === undefined &&
        oldRootKey !== undefined &&
        !leaf.verify(oldRootKey)
      )
        p.leafSeen = performance.now() - rotationStart;
      p.leaf = leaf;
    };
  // Authorize calls go over -connections keep-alive connections per target, shared by the proxies.
  const pools = ctx.targets.map((t) => new ChannelPool(hostPortOf(t), ctx.common.connections));
  // New inbound connections at a steady rate, from a random phase: each one an authorize call.
  const inbound = async (p: ProxyState, pool: ChannelPool): Promise<void> => {
    const interval = 1000 / inboundRate;
    let due = performance.now() + Math.random() * interval;
    const request = httpRequest(
      'POST',
      '/v1/agent/connect/authorize',
      ctx.headers,
      JSON.stringify({ Target: p.service, ClientCertURI: caller }),
    );
    while (!p.inboundSignal.aborted) {
      await pause(due - performance.now(), p.inboundSignal);
      if (p.inboundSignal.aborted) return;
      const sent = performance.now();
      const outcome = await pool.send(request);
      const answered = performance.now();
      // From when the call was due (open loop), or from when it went out if a timer fired early.
      const authorized = 'status' in outcome && outcome.status === 200 && authorizedIn(outcome.body);
      tally.record(outcome, (answered - Math.min(due, sent)) * 1000, authorized ? 'allow' : 'deny');
      if ('status' in outcome && outcome.status === 200) {
        if (tally.started) authorizedOk++;
        else warmupOk++;
        const k = changes.length - 1;
        const change = changes[k];
        if (change !== undefined && sent >= change.writeStart) {
          if (authorized === change.authorized) {
            p.changeSeen[k] ??= answered - change.writeStart;
            if (change.ack > 0 && sent >= change.ack && change.firstNewAfterAck === undefined)
              change.firstNewAfterAck = answered;
          } else if (change.ack > 0 && sent >= change.ack) change.staleAfterAck++;
        }
      }
      due += interval;
      if (due < performance.now() - interval) due = performance.now(); // a proxy far behind does not burst to catch up
    }
  };

  const markers: Marker[] = [];
  const cadence = `the proxies' call cadence: a proxy sees a change at its next call, up to ${Math.round(1000 / inboundRate)} ms later (-inbound-rate)`;
  const spread = "the agent's leaf_root_change_spread: proxies get a leaf of the new root spread over it";
  ctx.say(
    `this run takes about ${((ctx.common.warmupMs + ctx.common.measureMs) / 1000).toFixed(0)} s after the proxies start` +
      (rotate
        ? `, then up to ${String(ctx.flags['rotation-timeout'] ?? '2m')} (-rotation-timeout) more while every proxy gets a leaf of the new root, which the agent spreads over its leaf_root_change_spread`
        : ''),
  );
  const before = await readMetrics(ctx.api);
  const loops: Promise<void>[] = [];
  const inboundLoops: Promise<void>[] = [];
  try {
    ctx.say(`${count} proxies start: blocking reads of the roots and their leaf ...`);
    const bootStart = performance.now();
    for (const p of proxies) {
      loops.push(hold(p, '/v1/agent/connect/ca/roots', onRoots(p)));
      loops.push(hold(p, `/v1/agent/connect/ca/leaf/${encodeURIComponent(p.service)}`, onLeaf(p)));
    }
    const bootTimer = setTimeout(() => aborter.abort(), rotationTimeoutMs);
    await waitFor(() => proxies.every((p) => p.leaf !== undefined && p.activeRootId !== undefined));
    clearTimeout(bootTimer);
    const bootMs = performance.now() - bootStart;
    if (signal.aborted && !ctx.stop.aborted)
      throw new ClientError(
        'CLI_LOADTEST_TARGET',
        `Only ${proxies.filter((p) => p.leaf !== undefined).length} of ${count} proxies got a leaf within ${String(ctx.flags['rotation-timeout'] ?? '2m')}`,
      );
    ctx.say(`every proxy holds a leaf (${bootMs.toFixed(0)} ms); inbound connections at ${inboundRate}/s each`);
    proxies.forEach((p, i) => inboundLoops.push(inbound(p, pools[i % pools.length]!)));
    await pause(ctx.common.warmupMs, signal);

    tally.start(ctx.progress);
    const measureStart = performance.now();
    const mark = (label: string, at: number): void =>
      void markers.push({ label, t: Math.round(((at - measureStart) / 1000) * 1000) / 1000 });
    // A failed rotation is held until the run reaches it, not left to reject unobserved meanwhile.
    let rotation: Promise<unknown> = Promise.resolve(undefined);
    if (rotate && !signal.aborted) {
      oldRootKey = firstCert(initialRoots.Roots.find((r) => r.ID === initialRoots.ActiveRootID)!.RootCert).publicKey;
      rotation = rotateCa(ctx, (at) => {
        rotationStart = at;
        mark('CA rotation', at);
      }).then(
        () => undefined,
        (err: unknown) => err,
      );
    }
    for (let k = 0; k < changeCount && !signal.aborted; k++) {
      await pause(measureStart + ((k + 1) * ctx.common.measureMs) / (changeCount + 1) - performance.now(), signal);
      if (signal.aborted) break;
      const authorized = k % 2 === 1; // seeded allow; the first change denies
      const change: Change = {
        authorized,
        writeStart: performance.now(),
        ack: 0,
        staleAfterAck: 0,
        firstNewAfterAck: undefined,
      };
      changes.push(change);
      mark(`intention ${authorized ? 'allow' : 'deny'} #${k + 1}`, change.writeStart);
      await ctx.api.expectOk(
        'PUT',
        intentionPath,
        JSON.stringify({ Action: authorized ? 'allow' : 'deny', Description: 'svc-agent loadtest proxies' }),
        'changing the intention',
      );
      change.ack = performance.now();
    }
    await pause(measureStart + ctx.common.measureMs - performance.now(), signal);
    const rotationFailed = await rotation;
    if (rotationFailed !== undefined) throw rotationFailed;
    if (rotate) {
      const giveUp = setTimeout(() => aborter.abort(), rotationTimeoutMs);
      await waitFor(() => proxies.every((p) => p.rootsSeen !== undefined && p.leafSeen !== undefined));
      clearTimeout(giveUp);
    }
    inboundStop.abort();
    await Promise.all(inboundLoops);
    const { elapsedMs, cpuPct, clientBusy } = tally.finish();
    aborter.abort();
    for (const reader of readers) reader.close();
    await Promise.all(loops);
    const after = await readMetrics(ctx.api);

    const propagation: Propagation[] = changes.map((c, k) => {
      const seen = proxies.map((p) => p.changeSeen[k]).filter((x): x is number => x !== undefined);
      return {
        name: `intention ${c.authorized ? 'allow' : 'deny'} #${k + 1}`,
        includes: cadence,
        seen: seen.length,
        missing: count - seen.length,
        samplesMs: seen.sort((a, b) => a - b),
        staleAfterAck: c.staleAfterAck,
        agentMs: c.firstNewAfterAck === undefined ? null : c.firstNewAfterAck - c.ack,
      };
    });
    if (rotate) {
      for (const [name, pick] of [
        ['CA roots', (p: ProxyState) => p.rootsSeen],
        ['CA leaf', (p: ProxyState) => p.leafSeen],
      ] as const) {
        const seen = proxies.map(pick).filter((x): x is number => x !== undefined);
        propagation.push({
          name,
          includes: spread,
          seen: seen.length,
          missing: count - seen.length,
          samplesMs: seen.sort((a, b) => a - b),
        });
      }
    }
    return {
      measured: {
        aggregate: tally.aggregate,
        warmupOk,
        elapsedMs,
        cpuPct,
        threads: 1,
        clientBusy,
        askedRps: count * inboundRate,
      },
      markers,
      settings: {
        proxies: count,
        connections: null,
        mode: 'open',
        rate: count * inboundRate,
        inboundRate,
        changes: changeCount,
        rotated: rotate,
      },
      crossCheck: crossCheck(
        'svc.connect.authorize.allowed + denied',
        authorizedOk + warmupOk,
        delta(before, after, ['svc.connect.authorize.allowed', 'svc.connect.authorize.denied']),
      ),
      propagation,
      facts: [
        ['proxies started', count],
        ['all holding a leaf after ms', Math.round(bootMs)],
        [
          'rotation',
          rotate ? 'rotated the CA once (-allow-writes)' : "not measured: -allow-writes rotates the target's CA",
        ],
      ],
    };
  } finally {
    inboundStop.abort();
    aborter.abort();
    for (const reader of readers) reader.close();
    await Promise.all([...loops, ...inboundLoops]);
    for (const pool of pools) pool.close();
    await ctx.api.call('DELETE', intentionPath);
  }
}

/** A rotation as an operator does it: the same provider settings with a new private key. */
async function rotateCa(ctx: RunContext, started: (at: number) => void): Promise<void> {
  const current = await ctx.api.json<{ Provider: string; Config: Record<string, unknown> }>(
    'GET',
    '/v1/connect/ca/configuration',
    undefined,
    'reading the CA configuration',
  );
  const rsa = current.Config.PrivateKeyType === 'rsa';
  const bits = Number(current.Config.PrivateKeyBits ?? (rsa ? 2048 : 256));
  const key = rsa
    ? generateKeyPairSync('rsa', { modulusLength: bits }).privateKey.export({ type: 'pkcs1', format: 'pem' })
    : generateKeyPairSync('ec', {
        namedCurve:
          ({ 224: 'P-224', 256: 'P-256', 384: 'P-384', 521: 'P-521' } as Record<number, string>)[bits] ?? 'P-256',
      }).privateKey.export({ type: 'sec1', format: 'pem' });
  const { RootCert: _root, ...config } = current.Config;
  ctx.say('rotating the CA ...');
  started(performance.now());
  await ctx.api.expectOk(
    'PUT',
    '/v1/connect/ca/configuration',
    JSON.stringify({ Provider: current.Provider, Config: { ...config, PrivateKey: key } }),
    'rotating the CA',
  );
}

export const proxiesScenario: Scenario = {
  synopsis:
    'P sidecar proxies holding roots and leaf blocking reads, authorizing inbound connections; intention-change and CA-rotation propagation',
  flags,
  unit: 'req/s',
  run,
};
