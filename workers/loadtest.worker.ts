// One load-generator thread of `svc-agent loadtest` (src/cli/loadtest/cli.ts): its share of the
// connections (and of the open-loop rate) over the run's schedule, the warm-up first, reporting
// each window of the measured time (src/loadgen/windows.ts) and then the drain to the main thread,
// which merges the threads (src/loadgen/aggregate.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { HttpChannel, type HttpTarget } from '../src/loadgen/http-channel.js';
import { Pacer } from '../src/loadgen/pacer.js';
import { Recorder } from '../src/loadgen/recorder.js';
import { drive, epochClock, type Channel } from '../src/loadgen/scheduler.js';
import type { LoadThreadData, LoadThreadDone, LoadThreadTimes } from '../src/loadgen/thread-data.js';
import { answered, type Outcome } from '../src/loadgen/types.js';
import { windowEnds, Windows } from '../src/loadgen/windows.js';

const data = workerData as LoadThreadData;
const port = parentPort;
if (port === null) throw new Error('loadtest.worker runs as a worker thread');
let stopped = false;
let schedule: (times: LoadThreadTimes) => void = () => undefined;
const times = new Promise<LoadThreadTimes>((resolve) => (schedule = resolve));
port.on('message', (message: unknown) => {
  if (message === 'stop') stopped = true;
  else if (typeof message === 'object' && message !== null) schedule(message as LoadThreadTimes);
});

const requests = data.requests.map((r) => Buffer.from(r.buffer, r.byteOffset, r.byteLength));
let turn = data.offset;
const stampAt = data.stampAt;
let stampedSent = 0;
const bytesOf = (i: number): Buffer => {
  const at = stampAt?.[i] ?? -1;
  if (at < 0) return requests[i] as Buffer;
  stampedSent++;
  // A copy: the socket may still hold the previous one's bytes.
  const copy = Buffer.from(requests[i] as Buffer);
  copy.write(sendTimeMicros(), at, 'latin1');
  return copy;
};
const sendTimeMicros = (): string => String(Math.round(epochClock.now() * 1000)).padStart(16, '0');

// Each connection remembers which request it sent last, so an answer is named by its request (kv's read or write).
const lastSent = new Map<Channel, number>();
const requestKinds = data.requestKinds;
const answerKinds = data.answerKinds;
const mark = answerKinds === undefined ? undefined : Buffer.from(answerKinds.bytes);
const channels = Array.from({ length: data.connections }, (_, c) => {
  const target = data.targets[c % data.targets.length] as HttpTarget;
  const channel: HttpChannel = new HttpChannel(
    target,
    () => {
      const i = turn++ % requests.length;
      if (requestKinds !== undefined) lastSent.set(channel, i);
      return bytesOf(i);
    },
    data.connectionPerRequest,
    10_000,
    false,
    mark,
  );
  return channel;
});

const kindOf = (outcome: Outcome, channel: Channel): string => {
  if (requestKinds !== undefined) return requestKinds[lastSent.get(channel) ?? 0] ?? '';
  if (answerKinds !== undefined && 'marked' in outcome)
    return outcome.marked ? answerKinds.ifFound : answerKinds.otherwise;
  return '';
};
const clock = epochClock;
const stages = data.stages;

// Ready: the main thread sets the schedule once every thread is, so none starts behind it.
port.postMessage({ type: 'ready' });
const { warmupFrom, from, until } = await times;
const totalMs = until - from;

const recorder = new Recorder();
const windows = new Windows(recorder, windowEnds(totalMs, stages), (tick) => port.postMessage({ type: 'tick', tick }));
let warmupOk = 0;
let lastMs = totalMs;
let ticker: NodeJS.Timeout | undefined;
// Each window closes at its end even when no answer comes to close it.
const nextTick = (): void => {
  const end = windows.nextEndMs;
  if (end === undefined) return;
  ticker = setTimeout(
    () => {
      windows.roll(clock.now() - from);
      nextTick();
    },
    from + end - clock.now(),
  );
};
let elu: ReturnType<typeof performance.eventLoopUtilization> | undefined;
const eluAtStart = setTimeout(() => (elu = performance.eventLoopUtilization()), Math.max(0, from - clock.now()));
nextTick();
// One schedule, warm-up then measured time (the warm-up at the first stage's starting rate), so
// nothing waits between them: an answer belongs to the warm-up or to a window by when it came.
const warmup = from > warmupFrom && stages !== undefined ? [{ ms: from - warmupFrom, rate: stages[0]?.rate ?? 0 }] : [];
await clock.sleepUntil(warmupFrom);
await drive({
  channels,
  pacer: stages === undefined ? undefined : new Pacer([...warmup, ...stages]),
  from: warmupFrom,
  until,
  clock,
  record: (o, us, late, channel) => {
    const now = clock.now() - from;
    if (now < 0) {
      if (answered(o)) warmupOk++;
      return;
    }
    windows.roll(now);
    lastMs = Math.max(lastMs, now);
    recorder.record(o, us, late, kindOf(o, channel));
  },
  dropped: (n) => {
    const now = clock.now() - from;
    if (now < 0) return;
    windows.roll(now);
    recorder.dropped(n);
  },
  stopped: () => stopped,
});
// A schedule whose last call was answered before its end still has its last window to close.
if (!stopped) await clock.sleepUntil(until);
clearTimeout(ticker);
clearTimeout(eluAtStart);
const busy = elu === undefined ? 0 : performance.eventLoopUtilization(elu).utilization;
if (stopped) windows.cut(clock.now() - from);
else windows.drain(lastMs);
for (const c of channels) c.close();
const done: LoadThreadDone = { type: 'done', warmupOk, stampedSent, busy };
port.postMessage(done);
