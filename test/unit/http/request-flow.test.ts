// The request flow's promises to a transport, seen through a TransportIo that records what it is
// asked: one gone-hook per request at most (uWS takes one onAborted), nothing written once the
// client has gone, one answer per request, a body gathered under its cap.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../src/core/clock.js';
import { silentLogger } from '../../../src/core/log.js';
import { BlockingQueries, type WatchedRead } from '../../../src/http/blocking.js';
import { errorReply } from '../../../src/http/dispatch.js';
import { noteFramingHeader, resetFraming } from '../../../src/http/framing.js';
import { textReply, type Reply } from '../../../src/http/reply.js';
import { agentError } from '../../../src/core/errors.js';
import { RequestFlow, type TransportIo } from '../../../src/http/request-flow.js';
import type { RequestHead } from '../../../src/http/request.js';
import type { CompiledRoute, RequestHandler } from '../../../src/http/routes.js';
import { openEmbeddedStore } from '../../../src/state/embedded/index.js';
import type { StateStore } from '../../../src/state/types.js';

/** One request's side of the transport: what the flow asked of it. */
class Exchange {
  readonly writes: { reply: Reply; late: boolean; close: boolean }[] = [];
  goneHooks = 0;
  gone: (() => void) | undefined;
  piece: ((chunk: Buffer, isLast: boolean) => void) | undefined;
  /** A held request's run, called by the test as the transport would once its read returned. */
  heldRun: (() => void) | undefined;
  /** Whether its reads were held for a late answer. */
  readsHeld = false;
  /** Writes made before each release of its reads. */
  released: number[] = [];
}

const io: TransportIo<Exchange, Buffer> = {
  write: (x, reply, _head, close) => void x.writes.push({ reply, late: false, close }),
  writeLate: (x, reply, close) => void x.writes.push({ reply, late: true, close }),
  refuse: (x, reply) => void x.writes.push({ reply, late: false, close: true }),
  onGone: (x, gone) => {
    x.goneHooks++;
    x.gone = gone;
  },
  readBody: (x, piece) => void (x.piece = piece),
  keep: (chunk) => chunk,
  hold: (x, run) => void (x.heldRun = run),
  holdReads: (x) => void (x.readsHeld = true),
  release: (x) => void x.released.push(x.writes.length),
};

const head = (method: string, closeConnection = false): RequestHead => ({
  method,
  path: '/r',
  rawQuery: '',
  tokenHeader: '',
  authorization: '',
  namespaceHeader: '',
  closeConnection,
});

function route(handler: RequestHandler, maxBodyBytes = 8, changesState: readonly string[] = []): CompiledRoute {
  return {
    path: '/r',
    prefix: false,
    handlers: new Map([
      ['GET', handler],
      ['PUT', handler],
      ['DELETE', handler],
    ]),
    changesState: new Set(changesState),
    allow: 'OPTIONS,GET,PUT',
    maxBodyBytes,
    bodyTooLarge: (size, max) => agentError('HTTP_BODY_TOO_LARGE', { size, max }),
  };
}

describe('RequestFlow', () => {
  let store: StateStore;
  let queries: BlockingQueries;
  let wake: (() => void) | undefined;
  let index = 1;
  const read: WatchedRead = {
    target: (fn) => {
      wake = fn;
      return () => (wake = undefined);
    },
    index: () => index,
    render: (i) => textReply(200, `index ${i}`),
  };
  const park: RequestHandler = (req) => queries.answer(req, { minIndex: index, timeoutMs: 60_000 }, read);

  beforeAll(async () => {
    store = await openEmbeddedStore({ log: silentLogger });
    queries = new BlockingQueries(store, new FakeClock(), (err, path) => errorReply(err, silentLogger, path));
  });
  afterAll(() => store.close());

  const flow = new RequestFlow(io, silentLogger, undefined);
  /** Hands a request over as an adapter does: framing first, then the head. */
  const send = (x: Exchange, r: CompiledRoute, h: RequestHead, framing: Record<string, string> = {}): void => {
    resetFraming(flow.framing);
    for (const [name, value] of Object.entries(framing)) noteFramingHeader(flow.framing, name, value);
    flow.route(x, r, h, undefined);
  };

  it('answers a plain reply inside the request callback, asking for no gone-hook', () => {
    const x = new Exchange();
    send(
      x,
      route(() => textReply(200, 'ok')),
      head('GET'),
    );
    expect(x.writes.map((w) => [w.reply.body, w.late])).toEqual([['ok', false]]);
    expect(x.goneHooks).toBe(0);
  });

  it('hooks gone once for a body request whose handler parks, and writes nothing once the client has gone', () => {
    const x = new Exchange();
    send(x, route(park), head('PUT'), { 'content-length': '2' });
    x.piece?.(Buffer.from('ab'), true);
    expect([x.goneHooks, queries.parked]).toEqual([1, 1]);
    x.gone?.();
    expect(queries.parked).toBe(0);
    index++;
    wake?.();
    expect(x.writes).toEqual([]);
  });

  it('hooks gone once for a read that parks, and answers it late when it wakes', () => {
    const x = new Exchange();
    send(x, route(park), head('GET'));
    expect([x.goneHooks, queries.parked]).toEqual([1, 1]);
    index++;
    wake?.();
    expect(x.writes.map((w) => [w.reply.body, w.late])).toEqual([[`index ${index}`, true]]);
  });

  it('hooks gone once for a body request whose handler returns a promise, and answers once', async () => {
    const x = new Exchange();
    let settle!: (reply: Reply) => void;
    send(
      x,
      route(() => new Promise((resolve) => (settle = resolve))),
      head('PUT'),
      { 'transfer-encoding': 'chunked' },
    );
    x.piece?.(Buffer.from('a'), false);
    x.piece?.(Buffer.from('b'), true);
    settle(textReply(200, 'done'));
    await Promise.resolve();
    x.gone?.(); // the connection closes after the answer: nothing more is written
    expect(x.goneHooks).toBe(1);
    expect(x.writes.map((w) => w.reply.body)).toEqual(['done']);
  });

  it('writes nothing for a promise that settles after its client went away', async () => {
    const x = new Exchange();
    let settle!: (reply: Reply) => void;
    send(
      x,
      route(() => new Promise((resolve) => (settle = resolve))),
      head('GET'),
    );
    x.gone?.();
    settle(textReply(200, 'late'));
    await Promise.resolve();
    expect(x.writes).toEqual([]);
  });

  it('hands the handler the body joined once, and runs nothing for a body over the cap', () => {
    const bodies: string[] = [];
    const echo = route((req) => {
      bodies.push(req.body?.toString() ?? '');
      return textReply(200, 'ok');
    });
    const x = new Exchange();
    send(x, echo, head('PUT'), { 'transfer-encoding': 'chunked' });
    for (const piece of ['ab', 'cd', '']) x.piece?.(Buffer.from(piece), piece === '');
    expect(bodies).toEqual(['abcd']);
    const over = new Exchange();
    send(over, echo, head('PUT', true), { 'transfer-encoding': 'chunked' });
    for (const piece of ['abcde', 'fghij', 'k', '']) over.piece?.(Buffer.from(piece), piece === '');
    expect(bodies).toEqual(['abcd']);
    expect(over.writes.map((w) => [w.reply.status, w.reply.body, w.late, w.close])).toEqual([
      [413, 'Request body(10 bytes) too large, max size: 8 bytes.', true, true],
    ]);
  });

  describe('a request that may change state (docs/decisions.md#held-writes)', () => {
    const counted = (): { route: CompiledRoute; runs: string[] } => {
      const runs: string[] = [];
      const r = route(
        (req) => {
          runs.push(`${req.head.method} ${req.body?.toString() ?? ''}`);
          return textReply(200, 'applied');
        },
        8,
        ['PUT', 'DELETE'],
      );
      return { route: r, runs };
    };

    it('runs only once the transport lets it, and its answer, ready at once, holds no reads', () => {
      const { route: r, runs } = counted();
      const x = new Exchange();
      send(x, r, head('PUT'), { 'content-length': '1' });
      x.piece?.(Buffer.from('v'), true);
      expect(runs).toEqual([]);
      x.heldRun?.();
      expect(runs).toEqual(['PUT v']);
      expect([x.readsHeld, x.released]).toEqual([false, []]);
      expect(x.writes.map((w) => [w.reply.body, w.late])).toEqual([['applied', true]]);
    });

    it('never runs once the client went away before the transport let it: not applied, not answered', () => {
      const { route: r, runs } = counted();
      for (const [method, framing] of [
        ['PUT', { 'content-length': '1' }],
        ['PUT', {}],
        ['DELETE', {}],
      ] as const) {
        const x = new Exchange();
        send(x, r, head(method), framing);
        x.piece?.(Buffer.from('v'), true);
        expect(x.heldRun).toBeDefined();
        x.gone?.();
        x.heldRun?.();
        expect([runs, x.writes, x.released]).toEqual([[], [], []]);
      }
    });

    it('holds reads for a late answer until it is written, and for ever once the client has gone', async () => {
      let settle!: (reply: Reply) => void;
      const r = route(() => new Promise((resolve) => (settle = resolve)), 8, ['DELETE']);
      const x = new Exchange();
      send(x, r, head('DELETE'));
      x.heldRun?.();
      expect([x.readsHeld, x.released]).toEqual([true, []]);
      settle(textReply(200, 'done'));
      await Promise.resolve();
      expect(x.released).toEqual([0]);
      expect(x.writes.map((w) => w.reply.body)).toEqual(['done']);
      const gone = new Exchange();
      send(gone, r, head('DELETE'));
      gone.heldRun?.();
      gone.gone?.();
      settle(textReply(200, 'late'));
      await Promise.resolve();
      expect([gone.writes, gone.released]).toEqual([[], []]);
    });

    it('runs a method that changes no state within the read, as a GET', () => {
      const { runs } = counted();
      const readOnly = route(() => {
        runs.push('read');
        return textReply(200, 'ok');
      });
      const x = new Exchange();
      send(x, readOnly, head('PUT'), { 'content-length': '1' });
      x.piece?.(Buffer.from('v'), true);
      expect([runs, x.heldRun, x.writes.map((w) => w.late)]).toEqual([['read'], undefined, [false]]);
    });
  });
});
