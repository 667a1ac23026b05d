// One load-generator thread of `svc-agent loadtest` (src/cli/loadtest/cli.ts): its share of the
// connections (and of the open-loop rate) over the run's schedule, reporting each measured second
// to the main thread, which merges the threads (src/loadgen/aggregate.ts).
import { parentPort, workerData } from 'node:worker_threads';
import { HttpChannel, type HttpTarget } from '../src/loadgen/http-channel.js';
import { Recorder } from '../src/loadgen/recorder.js';
import { drive, epochClock } from '../src/loadgen/scheduler.js';
import type { LoadThreadData } from '../src/loadgen/thread-data.js';
import { answered } from '../src/loadgen/types.js';


const data = workerData as LoadThreadData;
const port = parentPort;
if (port === null) throw new Error('loadtest.worker runs as a worker thread');
let stopped = false;
port.on('message', (message: unknown) => {
  if (message === 'stop') stopped = true;
});

const requests = data.requests.map((r) => Buffer.from(r.buffer, r.byteOffset, r.byteLength));
let turn = data.offset;
const stampAt = data.stampAt;
let stampedSent = 0;
const next =
  stampAt === undefined
    ? (): Buffer => requests[turn++ % requests.length] as Buffer
    : (): Buffer => {
        const i = turn++ % requests.length;
        const at = stampAt[i] as number;
        if (at < 0) return requests[i] as Buffer;
        stampedSent++;
        // A copy: the socket may still hold the previous one's bytes.
        const copy = Buffer.from(requests[i] as Buffer);
        copy.write(sendTimeMicros(), at, 'latin1');
        return copy;
      };
const sendTimeMicros = (): string => String(Math.round(epochClock.now() * 1000)).padStart(16, '0');
const channels = Array.from({ length: data.connections }, (_, i) => new HttpChannel(data.targets[i % data.targets.length] as HttpTarget, next, data.connectionPerRequest));
const clock = epochClock;

let warmupOk = 0;
if (data.from > data.warmupFrom) await drive({ channels, rate: data.rate, from: data.warmupFrom, until: data.from, clock, record: (o) => void (answered(o) && warmupOk++), stopped: () => stopped });
const recorder = new Recorder();
let second = 1;
const ticker = setInterval(() => port.postMessage({ type: 'tick', tick: recorder.tick(second++) }), 1000);
await drive({ channels, rate: data.rate, from: data.from, until: data.until, clock, record: (o, us) => recorder.record(o, us), stopped: () => stopped });
clearInterval(ticker);
port.postMessage({ type: 'tick', tick: recorder.tick(second) });
for (const c of channels) c.close();
port.postMessage({ type: 'done', warmupOk, stampedSent });
