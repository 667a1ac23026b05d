import { EventEmitter } from 'node:events';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KeepAlives, type KeepAliveStream } from '../../../../src/state/etcd/keep-alives.js';

class FakeStream extends EventEmitter implements KeepAliveStream {
  readonly written: string[] = [];
  ended = false;
  write(request: { readonly ID: string }): void {
    this.written.push(request.ID);
  }
  end(): void {
    this.ended = true;
  }
  answer(id: string, ttl: number): void {
    this.emit('data', { ID: id, TTL: String(ttl) });
  }
}

class Lost extends Error {}
class Late extends Error {}

function keepAlives(): { alives: KeepAlives; streams: FakeStream[] } {
  const streams: FakeStream[] = [];
  const alives = new KeepAlives({
    open: () => {
      const stream = new FakeStream();
      streams.push(stream);
      return Promise.resolve(stream);
    },
    streamLost: (why) => new Lost(why),
    deadlineExceeded: () => new Late('unanswered'),
  });
  return { alives, streams };
}

const settle = (p: Promise<number>): Promise<number | Error> => p.catch((err: Error) => err);

describe('KeepAlives', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('renews many leases on one stream, each answer to the call waiting for its ID', async () => {
    const { alives, streams } = keepAlives();
    const deadline = Date.now() + 1_000;
    const a = alives.renew('1', deadline);
    const b = alives.renew('2', deadline);
    const a2 = alives.renew('1', deadline);
    await vi.advanceTimersByTimeAsync(0);
    expect(streams).toHaveLength(1);
    expect(streams[0]!.written).toEqual(['1', '2', '1']);
    streams[0]!.answer('2', 20);
    streams[0]!.answer('1', 10);
    streams[0]!.answer('1', 0);
    expect(await Promise.all([a, b, a2])).toEqual([10, 20, 0]);
    const c = alives.renew('3', deadline);
    await vi.advanceTimersByTimeAsync(0);
    streams[0]!.answer('3', 30);
    expect(await c).toBe(30);
    expect(streams).toHaveLength(1);
  });

  it('fails everything waiting when the stream errs or ends, and opens a new one for the next renewal', async () => {
    const { alives, streams } = keepAlives();
    const deadline = Date.now() + 1_000;
    const a = settle(alives.renew('1', deadline));
    const b = settle(alives.renew('2', deadline));
    await vi.advanceTimersByTimeAsync(0);
    streams[0]!.emit('error', new Error('member went away'));
    expect(await a).toBeInstanceOf(Lost);
    expect(await b).toBeInstanceOf(Lost);
    expect(streams[0]!.ended).toBe(true);

    const c = alives.renew('1', deadline);
    await vi.advanceTimersByTimeAsync(0);
    expect(streams).toHaveLength(2);
    // An answer arriving late on the dropped stream is not handed to the new stream's call.
    streams[0]!.answer('1', 99);
    streams[1]!.answer('1', 10);
    expect(await c).toBe(10);

    const d = settle(alives.renew('1', deadline));
    await vi.advanceTimersByTimeAsync(0);
    streams[1]!.emit('end');
    expect(await d).toBeInstanceOf(Lost);
  });

  it('drops a stream that leaves a renewal unanswered past its deadline, with all its renewals', async () => {
    const { alives, streams } = keepAlives();
    const soon = settle(alives.renew('1', Date.now() + 100));
    const later = settle(alives.renew('2', Date.now() + 5_000));
    await vi.advanceTimersByTimeAsync(100);
    expect(await soon).toBeInstanceOf(Late);
    expect(await later).toBeInstanceOf(Late);
    expect(streams[0]!.ended).toBe(true);
    // Its answer, should it come, goes nowhere; the next renewal has a stream of its own.
    streams[0]!.answer('2', 10);
    const next = alives.renew('2', Date.now() + 1_000);
    await vi.advanceTimersByTimeAsync(0);
    streams[1]!.answer('2', 10);
    expect(await next).toBe(10);
  });

  it('refuses renewals once closed, failing those waiting', async () => {
    const { alives, streams } = keepAlives();
    const waiting = settle(alives.renew('1', Date.now() + 1_000));
    await vi.advanceTimersByTimeAsync(0);
    alives.close();
    expect(await waiting).toBeInstanceOf(Lost);
    expect(streams[0]!.ended).toBe(true);
    expect(await settle(alives.renew('1', Date.now() + 1_000))).toBeInstanceOf(Lost);
  });
});
