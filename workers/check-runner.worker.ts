// The check-runner thread: runs the agent's HTTP, TCP and gRPC checks (src/local/probes/) so that
// their sockets and timers stay off the main thread, which hears only status and output changes.
import { parentPort, workerData } from 'node:worker_threads';
import type { FromRunner, RunnerData, ToRunner } from '../src/local/probe-protocol.js';
import { ProbeScheduler } from '../src/local/probes/probe-scheduler.js';

const port = parentPort;
if (port === null) throw new Error('check-runner.worker.ts runs as a worker thread');
const post = (message: FromRunner): void => port.postMessage(message);
const { caPem } = workerData as RunnerData;
const scheduler = new ProbeScheduler((id, status, output) => post({ type: 'result', id, status, output }), {
  caPem,
});

port.on('message', (message: ToRunner) => {
  if (message.type === 'set') scheduler.set(message.id, message.probe);
  else if (message.type === 'trust') scheduler.trust(message.caPem);
  else scheduler.remove(message.id);
});
