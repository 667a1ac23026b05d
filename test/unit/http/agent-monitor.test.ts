// The monitor's streams below the transports: a line is queued inside the logging call and sent
// with the others on the next turn; a reader that does not drain loses the lines past 512, which
// are counted and warned of when it goes; the agent's stop sends what is queued, then ends each
// stream; a client gone leaves the log untapped.
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createLogger, type LogTap } from '../../../src/core/log.js';
import { LogMonitors } from '../../../src/http/handlers/agent-monitor.js';
import type { StreamSink } from '../../../src/http/reply.js';
import { recordingLogger } from '../../support/recording-logger.js';

function sink(accepting = true) {
  const chunks: string[] = [];
  const drains: (() => void)[] = [];
  let ended = false;
  const s: StreamSink = {
    write: (chunk) => {
      chunks.push(chunk);
      return accepting;
    },
    drained: (fn) => void drains.push(fn),
    end: () => void (ended = true),
  };
  return {
    s,
    chunks,
    ended: () => ended,
    drain: () => {
      accepting = true;
      for (const fn of drains.splice(0)) fn();
    },
  };
}

function rootLog() {
  const console: string[] = [];
  const log = createLogger('info', { write: (line: string) => console.push(line) } as unknown as NodeJS.WritableStream);
  return { log, console };
}

describe('LogMonitors', () => {
  it('sends the lines logged in one turn as one chunk, in Consul’s text or as JSON lines', async () => {
    const { log } = rootLog();
    const monitors = new LogMonitors(log, recordingLogger());
    const text = sink();
    const json = sink();
    monitors.stream('debug', false).open(text.s);
    monitors.stream('info', true).open(json.s);
    log.child({ component: 'agent.http' }).debug({ url: '/v1/kv/a' }, 'Request finished');
    log.info({}, 'second');
    expect(text.chunks).toEqual([]);
    await nextTurn();
    expect(text.chunks).toHaveLength(1);
    expect(text.chunks[0]).toMatch(
      /^\S+Z \[DEBUG\] agent\.http: Request finished: url=\/v1\/kv\/a\n\S+Z \[INFO\] {2}agent: second\n$/,
    );
    expect(
      json.chunks
        .join('')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).msg),
    ).toEqual(['second']);
  });

  it('holds lines while the socket is full, drops those past 512, and warns of them when the reader goes', async () => {
    const { log } = rootLog();
    const told = recordingLogger();
    const monitors = new LogMonitors(log, told);
    const slow = sink(false);
    const stream = monitors.stream('info', true);
    stream.open(slow.s);
    log.info({}, 'first');
    await nextTurn();
    expect(slow.chunks).toHaveLength(1);
    for (let i = 0; i < 600; i++) log.info({ i }, 'burst');
    await nextTurn();
    expect(slow.chunks).toHaveLength(1);
    slow.drain();
    await nextTurn();
    expect(slow.chunks[1]?.trim().split('\n')).toHaveLength(512);
    stream.close();
    expect(told.entries).toEqual([
      { level: 'warn', obj: { dropped_count: 88 }, msg: 'Dropped logs during monitor request' },
    ]);
    log.info({}, 'after');
    await nextTurn();
    expect(slow.chunks).toHaveLength(2);
    expect(log.isLevelEnabled?.('info')).toBe(true);
  });

  it('sends what is queued and ends every stream when the agent stops; a client gone untaps the log', async () => {
    const { log } = rootLog();
    const monitors = new LogMonitors(log, recordingLogger());
    const open = sink();
    const gone = sink();
    monitors.stream('debug', true).open(open.s);
    const leaving = monitors.stream('trace', true);
    leaving.open(gone.s);
    expect(log.isLevelEnabled?.('trace')).toBe(true);
    leaving.close();
    expect(log.isLevelEnabled?.('trace')).toBe(false);
    log.info({}, 'shutting down');
    monitors.close();
    expect(open.chunks.map((c) => JSON.parse(c).msg)).toEqual(['shutting down']);
    expect([open.ended(), gone.ended()]).toEqual([true, false]);
    expect(log.isLevelEnabled?.('debug')).toBe(false);
  });

  it('stays open and empty without a tap (an embedder’s own logger)', async () => {
    const monitors = new LogMonitors(undefined as LogTap | undefined, recordingLogger());
    const empty = sink();
    monitors.stream('info', false).open(empty.s);
    await nextTurn();
    monitors.close();
    expect([empty.chunks, empty.ended()]).toEqual([[], true]);
  });
});
