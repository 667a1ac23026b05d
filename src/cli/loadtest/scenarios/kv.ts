// `kv`: a read/write mix over keys under the run's prefix, driven by the generator threads, while
// watchers hold blocking reads on those keys. Each write carries its send time, so a watcher
// woken by it knows how long the change took to reach it.
import { ClientError, unexpectedAnswer } from '../../client/api.js';
import type { FlagSpecs } from '../../client/flags.js';
import { epochClock } from '../../../loadgen/scheduler.js';
import { httpRequest } from '../../../loadgen/http-channel.js';
import { call, childAborter, clientSignal, pause } from '../http.js';
import { runRequestLoad } from '../request-load.js';
import { Samples } from '../samples.js';
import type { RunContext, Scenario, ScenarioReport } from '../scenario.js';
import { crossCheck, delta, readMetrics } from '../target-metrics.js';

const STAMP_DIGITS = 16;

const flags: FlagSpecs = {
  keys: { kind: 'int', doc: 'Keys read and written (default 100).' },
  'write-percent': { kind: 'int', doc: 'Share of the requests that write, in percent (default 10).' },
  'value-size': { kind: 'int', doc: 'Bytes per written value (default 128; at least 16, the send time it carries).' },
  watchers: { kind: 'int', doc: 'Blocking readers on the keys being written, spread over them (default 50).' },
};

/** The send time (epoch microseconds) a write put at the start of the value; 0 when the answer holds none. */
function sendTimeIn(text: string): number {
  try {
    const value = (JSON.parse(text) as { Value?: string }[])[0]?.Value ?? '';
    return Number(Buffer.from(value, 'base64').subarray(0, STAMP_DIGITS).toString('latin1')) || 0;
  } catch {
    return 0;
  }
}

async function run(ctx: RunContext): Promise<ScenarioReport> {
  const keys = Math.max(1, Number(ctx.flags.keys ?? 100));
  const writePercent = Number(ctx.flags['write-percent'] ?? 10);
  if (writePercent > 100) throw new ClientError('CLI_LOADTEST_FLAG', '-write-percent is at most 100');
  const valueSize = Number(ctx.flags['value-size'] ?? 128);
  if (valueSize < STAMP_DIGITS) throw new ClientError('CLI_LOADTEST_FLAG', `-value-size is at least ${STAMP_DIGITS}`);
  const watcherCount = Number(ctx.flags.watchers ?? 50);
  const target = ctx.targets[0]!;
  const keyPath = (k: number): string => `/v1/kv/${ctx.prefix}/key-${k}`;

  const probe = await ctx.api.call('PUT', keyPath(0), '0'.repeat(STAMP_DIGITS));
  if (probe.status === 404 || probe.status === 405)
    throw new ClientError('CLI_LOADTEST_TARGET', 'The target does not serve /v1/kv: is it an agent?');
  if (probe.status === 403)
    throw new ClientError(
      'CLI_LOADTEST_TARGET',
      `The token may not write keys under ${ctx.prefix}/ (key_prefix write): ${probe.text.trim()}`,
    );
  if (probe.status !== 200) throw unexpectedAnswer(probe, 'seeding keys');
  const cleanup = async (): Promise<void> => void (await ctx.api.call('DELETE', `/v1/kv/${ctx.prefix}?recurse`));
  try {
    ctx.say(`seeding ${keys} keys ...`);
    const value = '0'.repeat(STAMP_DIGITS) + 'x'.repeat(valueSize - STAMP_DIGITS);
    for (let k = 1; k < keys; k++) await ctx.api.expectOk('PUT', keyPath(k), value, 'seeding keys');

    // Writes spread evenly through the sequence (i*7 mod 100 walks every residue).
    const requests: Buffer[] = [];
    const stampAt: number[] = [];
    const requestKinds: string[] = [];
    const length = Math.max(100, Math.min(10_000, keys * 100));
    for (let i = 0; i < length; i++) {
      const path = keyPath(i % keys);
      if ((i * 7) % 100 < writePercent) {
        const bytes = httpRequest('PUT', path, ctx.headers, value);
        requests.push(bytes);
        stampAt.push(bytes.length - value.length);
        requestKinds.push('write');
      } else {
        requestKinds.push('read');
        requests.push(httpRequest('GET', path, ctx.headers));
        stampAt.push(-1);
      }
    }

    const wakeUps = new Samples();
    let watchErrors = 0;
    const aborter = childAborter(ctx.stop);
    let measuring = false;
    const watch = async (k: number): Promise<void> => {
      const signal = clientSignal(aborter.signal);
      let index = 0;
      while (!signal.aborted) {
        const r = await call(target, 'GET', `${keyPath(k)}?index=${index}&wait=30s`, ctx.headers, undefined, signal);
        if (signal.aborted) return;
        if ('error' in r || r.reply.status !== 200) {
          watchErrors++;
          await pause(100, signal);
          continue;
        }
        const next = Number(r.reply.headers.get(ctx.indexHeader) ?? 0);
        if (next > index && index !== 0 && measuring) {
          const written = sendTimeIn(r.reply.text);
          if (written > 0) wakeUps.add(epochClock.now() - written / 1000);
        }
        index = next < index ? 0 : next; // an index that went back: start over, as Consul's clients do
      }
    };
    const watchers = Array.from({ length: watcherCount }, (_, j) => watch(j % keys));

    const before = await readMetrics(ctx.api);
    setTimeout(() => (measuring = true), ctx.common.warmupMs + 100).unref();
    const measured = await runRequestLoad(ctx, { requests, stampAt, requestKinds });
    const after = await readMetrics(ctx.api);
    aborter.abort();
    await Promise.all(watchers);
    const writes = measured.stampedSent ?? 0;
    const samples = wakeUps.sorted();
    return {
      measured,
      settings: { keys, writePercent, valueSize, watchers: watcherCount },
      // Every acknowledged write is one commit: the state index moves by exactly the writes sent on a target nobody else writes to.
      crossCheck: crossCheck(
        'svc.state.index advance (writes; exact only when nothing else writes)',
        writes,
        delta(before, after, ['svc.state.index']),
      ),
      propagation: [{ name: 'write to watcher', seen: wakeUps.count, missing: 0, samplesMs: samples }],
      facts: [
        ['writes sent', writes],
        ['watcher wake-ups', wakeUps.count],
        ['failed watcher reads', watchErrors],
      ],
    };
  } finally {
    await cleanup();
  }
}

export const kvScenario: Scenario = {
  synopsis: 'A KV read/write mix with blocking watchers on the keys being written',
  flags,
  unit: 'req/s',
  openLoop: true,
  run,
};
