// One load-generator thread of `svc-agent loadtest` (src/cli/loadtest/cli.ts): its share of the
// connections (and of the open-loop rate) over the run's schedule, reporting each measured second
// to the main thread, which merges the threads (src/loadgen/aggregate.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { HttpChannel, type HttpTarget } from '../src/loadgen/http-channel.js';
import { Pacer } from '../src/loadgen/pacer.js';
import { Recorder } from '../src/loadgen/recorder.js';
import { drive, epochClock, type Channel } from '../src/loadgen/scheduler.js';
import type { LoadThreadData, LoadThreadTimes } from '../src/loadgen/thread-data.js';
import { answered, type Outcome } from '../src/loadgen/types.js';

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

let warmupOk = 0;
if (from > warmupFrom) {
  await drive({
    channels,
    // The warm-up runs at the first stage's rate.
    pacer: stages === undefined ? undefined : new Pacer([{ ms: from - warmupFrom, rate: stages[0]?.rate ?? 0 }]),
    from: warmupFrom,
    until: from,
    clock,
    record: (o) => void (answered(o) && warmupOk++),
    stopped: () => stopped,
  });
}
const recorder = new Recorder();
let second = 1;
// Seconds counted from the schedule's start, so that a stage's seconds are its own.
let ticker: NodeJS.Timeout | undefined;
const nextTick = (): void => {
  ticker = setTimeout(
    () => {
      port.postMessage({ type: 'tick', tick: recorder.tick(second++) });
      nextTick();
    },
    from + second * 1000 - clock.now(),
  );
};
nextTick();
await drive({
  channels,
  pacer: stages === undefined ? undefined : new Pacer(stages),
  from,
  until,
  clock,
  record: (o, us, late, channel) => recorder.record(o, us, late, kindOf(o, channel)),
  dropped: (n) => recorder.dropped(n),
  stopped: () => stopped,
});
clearTimeout(ticker);
port.postMessage({ type: 'tick', tick: recorder.tick(second) });
for (const c of channels) c.close();
port.postMessage({ type: 'done', warmupOk, stampedSent });
