// The HTTP transport contract: every adapter behind server-types.ts (uWS, node:http) runs this
// suite unchanged, from raw sockets, started on its own with a tiny route table. It pins the
// request life cycle the adapters share: routing answers (404, 405, OPTIONS, redirects), the body
// cap (413, connection kept or closed), chunked bodies, late and parked answers, clients that go
// away, the headers every answer carries, keep-alive, pipelined writes (answered or not applied),
// framing refusals, malformed requests, the ACL gate, and the request trace. Each adapter also runs
// it serving a client agent's routes, whose writes a server agent runs (src/http/forward.ts), and a
// request forwarded to a server agent's runner is answered as one sent to the adapter. A streamed
// body (GET /v1/agent/monitor) goes out chunk by chunk and hears of its client going.
import { Agent as HttpAgent, get as httpGet } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveForwardedWrites, writeForwarder } from '../../src/cluster/write-forwarding.js';
import { FakeClock, type Clock } from '../../src/core/clock.js';
import { agentError } from '../../src/core/errors.js';
import type { Logger } from '../../src/core/log.js';
import { BlockingQueries, type WatchedRead } from '../../src/http/blocking.js';
import { errorReply } from '../../src/http/dispatch.js';
import { OVERSIZE_DRAIN_BYTES } from '../../src/http/framing.js';
import { textReply, type Header, type Reply, type ReplyStream, type StreamSink } from '../../src/http/reply.js';
import { forwardedCall, forwardedWriteRunner, forwardingRoutes, writeRoutes } from '../../src/http/forward.js';
import type { Method } from '../../src/http/route-types.js';
import {
  compileRoutes,
  type CompiledRoute,
  type MethodSpec,
  type RequestHandler,
  type Route,
} from '../../src/http/routes.js';
import type { HttpServer, HttpServerOptions } from '../../src/http/server-types.js';
import { openEmbeddedStore } from '../../src/state/embedded/index.js';
import { silentLogger } from '../../src/core/log.js';
import { MemoryMailbox } from '../support/memory-mailbox.js';
import { recordingLogger, type LogEntry } from '../support/recording-logger.js';
import { testGate } from '../unit/http/support.js';
import { RawClient, request, type WireResponse } from './transport-client.js';

export interface TransportUnderTest {
  readonly start: (options: HttpServerOptions) => Promise<HttpServer>;
  /**
   * Whose parser reads the requests, where the two differ (docs/decisions.md D18): uWS answers
   * HTTP/1.0 505 and a bad Host 400 itself (without the agent's headers), and the adapter refuses
   * chunked bodies (411) and methods llhttp does not know (501).
   */
  readonly parser: 'llhttp' | 'uws';
  /**
   * Serves the routes as a client agent does (src/agent/cluster-client.ts): each write method hands the request
   * through a write mailbox (in memory) to a server agent's runner of the same routes (src/http/forward.ts).
   */
  readonly writesForwarded?: boolean;
}

const MAX_BODY = 64;
const COMMON: readonly Header[] = [
  ['X-Svc-Default-ACL-Policy', 'allow'],
  ['X-Svc-Translate-Addresses', 'true'],
];
/** A constant header list, as authorize's X-Cache pairs are (the uWS adapter writes these as one block). */
const FROZEN_EXTRA: readonly Header[] = Object.freeze([['X-Cache', 'HIT'] as const]);

/** A promise the test settles by hand. */
interface Deferred {
  readonly promise: Promise<Reply>;
  resolve(reply: Reply): void;
  reject(err: unknown): void;
}
function deferred(): Deferred {
  let resolve!: (reply: Reply) => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<Reply>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** Resolves the next time `signal` is called. */
class Signal {
  private waiters: (() => void)[] = [];
  fire(): void {
    for (const fn of this.waiters.splice(0)) fn();
  }
  next(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

/** The routes, and what the tests observe of them. */
class Fixture {
  readonly calls = new Map<string, number>();
  readonly late: Deferred[] = [];
  readonly lateCalled = new Signal();
  readonly aborted = new Signal();
  /** The parked read's data index; `bump` raises it and wakes the watch. */
  index = 1;
  private wake: (() => void) | undefined;
  readonly watchCancelled = new Signal();
  readonly parkedCalled = new Signal();
  readonly records: { route: string; method: string; status: number }[] = [];
  readonly logs: LogEntry[] = [];
  /** The sinks of the open /v1/stream replies, and a signal per open and per close. */
  readonly sinks: StreamSink[] = [];
  readonly streamOpened = new Signal();
  readonly streamClosed = new Signal();

  constructor(readonly queries: BlockingQueries) {}

  bump(): void {
    this.index++;
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  count(name: string): void {
    this.calls.set(name, (this.calls.get(name) ?? 0) + 1);
  }

  routes(): Route[] {
    const parkedRead: WatchedRead = {
      target: (fn) => {
        this.wake = fn;
        return () => {
          this.wake = undefined;
          this.watchCancelled.fire();
        };
      },
      index: () => this.index,
      render: (index) => textReply(200, `index ${index}`),
    };
    return [
      route('/v1/echo', false, {
        GET: (req) => {
          this.count('echo GET');
          return {
            status: 200,
            body: `hello ${req.query.get('name') ?? ''}`,
            contentType: 'text/plain; charset=utf-8',
            headers: FROZEN_EXTRA,
          };
        },
        PUT: (req) => {
          this.count('echo PUT');
          return textReply(200, `got ${req.body?.length ?? -1}: ${req.body?.toString() ?? ''}`, [
            ['X-Seen', String(req.body?.length)],
          ]);
        },
      }),
      route('/v1/gone', false, {
        DELETE: () => {
          this.count('echo PUT');
          return textReply(200, 'got deleted');
        },
      }),
      route('/v1/kv/', true, { GET: (req) => textReply(200, `key ${req.rest}`) }),
      route('/v1/late', false, {
        GET: (req) => {
          const d = deferred();
          this.late.push(d);
          req.onAbort(() => this.aborted.fire());
          this.lateCalled.fire();
          return d.promise;
        },
        POST: () => Promise.reject(new Error('the backend fell over')),
        PUT: (req) => {
          this.count('late PUT');
          const d = deferred();
          this.late.push(d);
          req.onAbort(() => this.aborted.fire());
          this.lateCalled.fire();
          return d.promise;
        },
      }),
      route('/v1/park', false, {
        GET: (req) => {
          const answer = this.queries.answer(
            req,
            { minIndex: Number(req.query.get('index') ?? 0), timeoutMs: 600_000 },
            parkedRead,
          );
          this.parkedCalled.fire();
          return answer;
        },
      }),
      route('/v1/stream', false, {
        GET: () => {
          const stream: ReplyStream = {
            open: (sink) => {
              this.sinks.push(sink);
              this.streamOpened.fire();
            },
            close: () => this.streamClosed.fire(),
          };
          return { status: 200, contentType: 'text/plain; charset=utf-8', stream };
        },
      }),
      route('/v1/fail', false, {
        GET: () => {
          throw agentError('INVALID_INDEX');
        },
      }),
      {
        path: '/v1/guarded',
        methods: {
          PUT: {
            acl: { resource: 'key', access: 'write' },
            handler: (_req, identity) => {
              this.count('guarded PUT');
              return textReply(200, `written by ${identity.accessorId}`);
            },
          },
        },
      },
    ];
  }
}

/** A route whose methods look at no token. */
function route(path: string, prefix: boolean, handlers: Partial<Record<Method, RequestHandler>>): Route {
  const methods: Partial<Record<Method, MethodSpec>> = {};
  for (const [method, handler] of Object.entries(handlers) as [Method, RequestHandler][])
    methods[method] = { acl: 'none', handler: (req) => handler(req) };
  return { path, prefix, methods };
}

/** The routes as a client agent serves them, wired as src/agent/cluster-client.ts and cluster-server.ts wire them, with a server agent behind the mailbox. */
function clientAgentTable(routes: readonly Route[], clock: Clock): CompiledRoute[] {
  const mailbox = new MemoryMailbox(clock);
  const writes = compileRoutes(writeRoutes(routes), testGate(), MAX_BODY);
  serveForwardedWrites(mailbox, forwardedWriteRunner(writes, silentLogger), () => 0, silentLogger);
  const forward = writeForwarder({ mailbox, reached: () => Promise.resolve() });
  return compileRoutes(
    forwardingRoutes(routes, forward, () => undefined, 'client-node'),
    testGate(),
    MAX_BODY,
  );
}

/** What a request was answered, less what the transport adds to every answer. */
interface Answer {
  readonly status: number;
  readonly body: string;
  /** Lower-case names. */
  readonly headers: Record<string, string>;
}

const TRANSPORT_HEADERS = new Set([
  ...COMMON.map(([name]) => name.toLowerCase()),
  'content-length',
  'connection',
  'date',
  'keep-alive',
  'uwebsockets',
]);

function wireAnswer(res: WireResponse): Answer {
  const headers: Record<string, string> = {};
  for (const name of res.names) {
    const lower = name.toLowerCase();
    if (!TRANSPORT_HEADERS.has(lower)) headers[lower] = res.headers[lower] as string;
  }
  return { status: res.status, body: res.body, headers };
}

function replyAnswer(reply: Reply): Answer {
  const headers: Record<string, string> = {};
  if (reply.contentType !== undefined) headers['content-type'] = reply.contentType;
  for (const [name, value] of reply.headers ?? []) headers[name.toLowerCase()] = value;
  const body = reply.body === undefined ? '' : Buffer.from(reply.body).toString();
  return { status: reply.status, body, headers };
}

/** A logger with debug on, keeping its lines. */
function debugLogger(entries: LogEntry[]): Logger {
  const logger = recordingLogger(entries);
  return { ...logger, isLevelEnabled: () => true, child: () => debugLogger(entries) };
}

export function describeTransportContract(name: string, transport: TransportUnderTest): void {
  for (const traced of [false, true]) {
    describe(`HTTP transport contract: ${name}${traced ? ', with the request trace on' : ''}`, () => {
      let server: HttpServer;
      let fixture: Fixture;
      /** The routes compiled as a server agent serves them. */
      let table: CompiledRoute[];
      let closeStore: () => Promise<void>;
      const clients: RawClient[] = [];

      beforeAll(async () => {
        const store = await openEmbeddedStore({ log: silentLogger });
        closeStore = () => store.close();
        const clock = new FakeClock();
        const queries = new BlockingQueries(store, clock, (err, path) => errorReply(err, silentLogger, path));
        fixture = new Fixture(queries);
        const f = fixture;
        const routes = fixture.routes();
        table = compileRoutes(routes, testGate(), MAX_BODY);
        server = await transport.start({
          host: '127.0.0.1',
          port: 0,
          routes: transport.writesForwarded === true ? clientAgentTable(routes, clock) : table,
          commonHeaders: COMMON,
          log: traced ? debugLogger(fixture.logs) : silentLogger,
          recordRequest: traced ? (route, method, status) => void f.records.push({ route, method, status }) : undefined,
        });
      });
      afterAll(async () => {
        for (const client of clients) client.destroy();
        server.close();
        await closeStore();
      });

      const open = async (): Promise<RawClient> => {
        const client = await RawClient.open(server.port);
        clients.push(client);
        return client;
      };
      const once = async (raw: string, options: { head?: boolean } = {}): Promise<WireResponse> =>
        (await open()).exchange(raw, options);
      /** The common headers come first, in their order, on every answer. */
      const expectCommon = (res: WireResponse): void => {
        const ours = res.names.filter((n) => n.startsWith('X-Svc-'));
        expect(ours).toEqual(['X-Svc-Default-ACL-Policy', 'X-Svc-Translate-Addresses']);
        expect(res.headers['x-svc-default-acl-policy']).toBe('allow');
      };

      it('answers a route, with the common headers, then Content-Type, then the reply headers', async () => {
        const res = await once(request('GET', '/v1/echo?name=x'));
        expect([res.status, res.body]).toEqual([200, 'hello x']);
        expectCommon(res);
        const order = res.names.filter((n) =>
          ['X-Svc-Default-ACL-Policy', 'X-Svc-Translate-Addresses', 'Content-Type', 'X-Cache'].includes(n),
        );
        expect(order).toEqual(['X-Svc-Default-ACL-Policy', 'X-Svc-Translate-Addresses', 'Content-Type', 'X-Cache']);
        expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
        expect(res.headers['content-length']).toBe('7');
      });

      it('answers an unknown path 404, `/` 200, and redirects unclean and slash-less subtree paths', async () => {
        const missing = await once(request('GET', '/nowhere'));
        expect([missing.status, missing.body]).toEqual([
          404,
          "Invalid URL path: if attempting to use the HTTP API, ensure the path starts with '/v1/'\n",
        ]);
        expectCommon(missing);
        expect((await once(request('GET', '/v1/nothing'))).body).toBe(
          'Invalid URL path: not a recognized HTTP API endpoint\n',
        );
        expect((await once(request('GET', '/'))).status).toBe(200);
        const bare = await once(request('GET', '/v1/kv'));
        expect([bare.status, bare.headers.location, bare.body]).toEqual([
          301,
          '/v1/kv/',
          '<a href="/v1/kv/">Moved Permanently</a>.\n\n',
        ]);
        expectCommon(bare);
        const unclean = await once(request('PUT', '/v1/x/../echo?a=1'));
        expect([unclean.status, unclean.headers.location, unclean.body]).toEqual([301, '/v1/echo?a=1', '']);
      });

      it('answers a method the route lacks 405 with Allow, OPTIONS 200, HEAD without a body', async () => {
        const wrong = await once(request('DELETE', '/v1/echo'));
        expect([wrong.status, wrong.headers.allow, wrong.body]).toEqual([
          405,
          'OPTIONS,GET,PUT',
          'method DELETE not allowed',
        ]);
        expectCommon(wrong);
        const options = await once(request('OPTIONS', '/v1/echo'));
        expect([options.status, options.headers.allow, options.body]).toEqual([200, 'OPTIONS,GET,PUT', '']);
        const client = await open();
        const head = await client.exchange(request('HEAD', '/v1/echo'), { head: true });
        expect([head.status, head.headers['content-length']]).toEqual([405, String('method HEAD not allowed'.length)]);
        // Nothing of the body followed: the next answer on the connection reads cleanly.
        expect((await client.exchange(request('GET', '/v1/echo'))).body).toBe('hello ');
        const closing = await once(request('HEAD', '/nowhere', undefined, { Connection: 'close' }), { head: true });
        expect([closing.status, closing.headers.connection]).toEqual([404, 'close']);
        expectCommon(closing);
      });

      it("checks a write's ACL requirement with the request's token before running it", async () => {
        const before = fixture.calls.get('guarded PUT') ?? 0;
        const anonymous = await once(request('PUT', '/v1/guarded', 'v'));
        expect([anonymous.status, anonymous.body]).toEqual([403, expect.stringMatching(/^Permission denied/)]);
        expectCommon(anonymous);
        const unknown = await once(request('PUT', '/v1/guarded', 'v', { 'X-Consul-Token': 'unknown' }));
        expect([unknown.status, unknown.body]).toEqual([403, 'ACL not found']);
        const reader = await once(request('PUT', '/v1/guarded', 'v', { 'X-Consul-Token': 'r:key' }));
        expect(reader.status).toBe(403);
        expect(fixture.calls.get('guarded PUT') ?? 0).toBe(before);
        const writer = await once(request('PUT', '/v1/guarded', 'v', { 'X-Consul-Token': 'w:key' }));
        expect([writer.status, writer.body]).toEqual([200, 'written by accessor-of-w:key']);
        expect((fixture.calls.get('guarded PUT') ?? 0) - before).toBe(1);
      });

      it("answers a request forwarded to a server agent's runner as it answers one sent to it", async ({ skip }) => {
        if (transport.writesForwarded === true) skip('the runner is behind this server: its table serves above');
        const runner = forwardedWriteRunner(table, silentLogger);
        const forwarded = (method: string, target: string, body?: string, token = ''): Promise<Reply> => {
          const q = target.indexOf('?');
          return forwardedCall(runner, {
            Method: method,
            Path: q === -1 ? target : target.slice(0, q),
            Query: q === -1 ? '' : target.slice(q + 1),
            Token: token,
            Namespace: '',
            ...(body === undefined ? {} : { Body: Buffer.from(body).toString('base64') }),
          });
        };
        const cases: readonly [method: string, target: string, body?: string, token?: string][] = [
          ['GET', '/'],
          ['PUT', '/nowhere', 'x'],
          ['DELETE', '/v1/nothing'],
          ['GET', '/v1/kv'],
          ['PUT', '/v1/kv'],
          ['PUT', '/v1/x/../echo?a=1', 'x'],
          ['DELETE', '/v1/echo'],
          ['OPTIONS', '/v1/echo'],
          ['GET', '/v1/echo?name=x'],
          ['GET', '/v1/kv/a%2Fb'],
          ['GET', '/v1/kv/%zz'],
          ['PUT', '/v1/echo', 'a'.repeat(MAX_BODY)],
          ['PUT', '/v1/echo', 'b'.repeat(MAX_BODY + 1)],
          ['PUT', '/v1/echo', ''],
          ['PUT', '/v1/echo'],
          ['DELETE', '/v1/gone'],
          ['POST', '/v1/late', ''],
          ['GET', '/v1/fail'],
          ['PUT', '/v1/guarded', 'v'],
          ['PUT', '/v1/guarded', 'v', 'unknown'],
          ['PUT', '/v1/guarded', 'v', 'w:key'],
        ];
        for (const [method, target, body, token] of cases) {
          const headers: Record<string, string> = token === undefined ? {} : { 'X-Consul-Token': token };
          const direct = wireAnswer(await once(request(method, target, body, headers)));
          expect(replyAnswer(await forwarded(method, target, body, token)), `${method} ${target}`).toEqual(direct);
        }
        // A late answer, and a parked read woken by its data.
        const called = fixture.lateCalled.next();
        const late = forwarded('PUT', '/v1/late', 'x');
        await called;
        fixture.late.shift()?.resolve(textReply(200, 'got later', [['X-Late', 'yes']]));
        expect(replyAnswer(await late)).toEqual({
          status: 200,
          body: 'got later',
          headers: { 'content-type': 'text/plain; charset=utf-8', 'x-late': 'yes' },
        });
        const parked = fixture.parkedCalled.next();
        const woken = forwarded('GET', `/v1/park?index=${fixture.index}`);
        await parked;
        expect(fixture.queries.parked).toBe(1);
        fixture.bump();
        expect([(await woken).status, replyAnswer(await woken).body]).toEqual([200, `index ${fixture.index}`]);
        expect(fixture.queries.parked).toBe(0);
      });

      it('decodes the rest of a subtree path, and answers malformed percent-encoding 400', async () => {
        expect((await once(request('GET', '/v1/kv/a%2Fb'))).body).toBe('key a/b');
        const bad = await once(request('GET', '/v1/kv/%zz'));
        expect([bad.status, bad.body]).toEqual([400, 'Invalid URL path: malformed percent-encoding']);
        expectCommon(bad);
      });

      it('takes a body at the cap, answers one over it 413 and keeps the connection', async () => {
        const client = await open();
        const atCap = await client.exchange(request('PUT', '/v1/echo', 'a'.repeat(MAX_BODY)));
        expect([atCap.status, atCap.body]).toEqual([200, `got ${MAX_BODY}: ${'a'.repeat(MAX_BODY)}`]);
        const before = fixture.calls.get('echo PUT');
        const over = await client.exchange(request('PUT', '/v1/echo', 'b'.repeat(MAX_BODY + 1)));
        expect([over.status, over.body]).toEqual([
          413,
          `Request body(${MAX_BODY + 1} bytes) too large, max size: ${MAX_BODY} bytes.`,
        ]);
        expect(over.headers.connection).not.toBe('close');
        expectCommon(over);
        expect(fixture.calls.get('echo PUT')).toBe(before);
        expect((await client.exchange(request('GET', '/v1/echo'))).status).toBe(200);
      });

      it('answers a chunked body over the cap 413 once it has all arrived, the connection kept', async ({ skip }) => {
        if (transport.parser === 'uws') skip('the uWS adapter refuses chunked bodies: tested below');
        const client = await open();
        const chunk = 'c'.repeat(40);
        const over = await client.exchange(
          `PUT /v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n28\r\n${chunk}\r\n28\r\n${chunk}\r\n0\r\n\r\n`,
        );
        expect(over.status).toBe(413);
        expect(over.body).toMatch(/too large, max size: 64 bytes\.$/);
        expect((await client.exchange(request('GET', '/v1/echo'))).status).toBe(200);
      });

      it('answers a declared body far over the cap 413 at once and closes', async () => {
        const client = await open();
        const declared = MAX_BODY + OVERSIZE_DRAIN_BYTES + 1;
        const res = await client.exchange(`PUT /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: ${declared}\r\n\r\nabc`);
        expect([res.status, res.body]).toEqual([
          413,
          `Request body(${declared} bytes) too large, max size: ${MAX_BODY} bytes.`,
        ]);
        expect(res.headers.connection).toBe('close');
        expectCommon(res);
        await client.closed;
      });

      it('joins a chunked body and hands it to the handler whole', async ({ skip }) => {
        if (transport.parser === 'uws') skip('the uWS adapter refuses chunked bodies: tested below');
        const res = await once(
          'PUT /v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n',
        );
        expect([res.status, res.body, res.headers['x-seen']]).toEqual([200, 'got 5: abcde', '5']);
        const empty = await once('PUT /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
        expect(empty.body).toBe('got 0: ');
        const none = await once('PUT /v1/echo HTTP/1.1\r\nHost: x\r\n\r\n');
        expect(none.body).toBe('got 0: ');
      });

      it('answers two requests on one connection, one after the other and pipelined', async () => {
        const client = await open();
        expect((await client.exchange(request('GET', '/v1/echo?name=1'))).body).toBe('hello 1');
        expect((await client.exchange(request('PUT', '/v1/echo', 'xy'))).body).toBe('got 2: xy');
        expect((await client.exchange(request('PUT', '/v1/echo', ''))).body).toBe('got 0: ');
        expect((await client.exchange(request('PUT', '/v1/echo'))).body).toBe('got 0: ');
        client.send(request('GET', '/v1/echo?name=2') + request('GET', '/v1/kv/k'));
        expect((await client.next()).body).toBe('hello 2');
        expect((await client.next()).body).toBe('key k');
      });

      /** Up to `count` responses, fewer if the server closes first. */
      const upTo = async (client: RawClient, count: number): Promise<WireResponse[]> => {
        const responses: WireResponse[] = [];
        while (responses.length < count) {
          try {
            responses.push(await client.next());
          } catch {
            break;
          }
        }
        return responses;
      };

      it('answers every write it applies: one pipelined in a packet with a request behind it is answered, or not applied and closed', async () => {
        const writes = [
          request('PUT', '/v1/echo', 'v'),
          'DELETE /v1/gone HTTP/1.1\r\nHost: x\r\n\r\n',
          'PUT /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n',
          request('PUT', '/v1/late', 'later'),
        ];
        const applied = (): number => (fixture.calls.get('echo PUT') ?? 0) + (fixture.calls.get('late PUT') ?? 0);
        for (const write of writes) {
          for (const behind of [request('GET', '/v1/echo?name=behind'), request('PUT', '/v1/echo', 'w')]) {
            const before = applied();
            const client = await open();
            const called = fixture.lateCalled.next();
            client.send(write + behind);
            if (write.includes('/v1/late')) {
              // Answered once the handler runs, if it ever does (a transport that did not take it
              // closes), and only after a round trip on another connection: the server has had the
              // request behind it to read by then, as behind a real write's fsync.
              await Promise.race([called, client.closed]);
              if (fixture.late.length > 0) expect((await once(request('GET', '/v1/echo'))).status).toBe(200);
              fixture.late.shift()?.resolve(textReply(200, 'got later'));
            }
            const responses = await upTo(client, 2);
            const answered = responses.filter((r) => r.body.startsWith('got ')).length;
            expect(applied() - before, `${write} then ${behind}`).toBe(answered);
            if (transport.parser === 'llhttp') expect(responses).toHaveLength(2);
            if (responses.length < 2) await client.closed;
          }
        }
      });

      it('answers requests pipelined behind a pending write in later packets, in order', async () => {
        const client = await open();
        const called = fixture.lateCalled.next();
        const before = fixture.calls.get('echo PUT') ?? 0;
        client.send(request('PUT', '/v1/late', 'first'));
        await called;
        // Behind the pending write, in packets of their own: a read, then a write. A round trip on
        // another connection after them means the server has had them to read before the answer.
        client.send(request('GET', '/v1/echo?name=2'));
        client.send(request('PUT', '/v1/echo', 'third'));
        expect((await once(request('GET', '/v1/echo'))).status).toBe(200);
        fixture.late.shift()?.resolve(textReply(200, 'first done'));
        const responses = await upTo(client, 3);
        expect(responses.map((r) => r.body)).toEqual(['first done', 'hello 2', 'got 5: third']);
        expect((fixture.calls.get('echo PUT') ?? 0) - before).toBe(1);
      });

      it('closes after answering a request that asked for Connection: close', async () => {
        const client = await open();
        const res = await client.exchange(request('GET', '/v1/echo', undefined, { Connection: 'close' }));
        expect(res.status).toBe(200);
        await client.closed;
      });

      it('answers a promise when it settles, a rejection with 500, a thrown AgentError by its kind', async () => {
        const client = await open();
        const called = fixture.lateCalled.next();
        client.send(request('GET', '/v1/late'));
        await called;
        fixture.late.shift()?.resolve(textReply(200, 'later'));
        const res = await client.next();
        expect([res.status, res.body]).toEqual([200, 'later']);
        expectCommon(res);
        const failed = await client.exchange(request('POST', '/v1/late', ''));
        expect([failed.status, failed.body]).toEqual([500, 'the backend fell over']);
        expectCommon(failed);
        const invalid = await client.exchange(request('GET', '/v1/fail'));
        expect([invalid.status, invalid.body]).toEqual([400, 'Invalid index']);
      });

      it('answers a parked read when its data changes', async () => {
        const client = await open();
        const parked = fixture.parkedCalled.next();
        client.send(request('GET', `/v1/park?index=${fixture.index}`));
        await parked;
        expect(fixture.queries.parked).toBe(1);
        fixture.bump();
        const res = await client.next();
        expect([res.status, res.body]).toEqual([200, `index ${fixture.index}`]);
        expectCommon(res);
        expect(fixture.queries.parked).toBe(0);
        // The connection is still usable after a late answer.
        expect((await client.exchange(request('GET', '/v1/echo'))).status).toBe(200);
      });

      it('forgets a parked read whose client went away, writing nothing', async () => {
        const client = await open();
        const parked = fixture.parkedCalled.next();
        client.send(request('GET', `/v1/park?index=${fixture.index}`));
        await parked;
        expect(fixture.queries.parked).toBe(1);
        const cancelled = fixture.watchCancelled.next();
        const answered = fixture.records.filter((r) => r.route === '/v1/park').length;
        client.destroy();
        await cancelled;
        expect(fixture.queries.parked).toBe(0);
        expect(fixture.records.filter((r) => r.route === '/v1/park').length).toBe(answered);
      });

      it('writes nothing for a promise that settles after its client went away', async () => {
        const client = await open();
        const called = fixture.lateCalled.next();
        client.send(request('GET', '/v1/late'));
        await called;
        const aborted = fixture.aborted.next();
        const answered = fixture.records.filter((r) => r.route === '/v1/late').length;
        client.destroy();
        await aborted;
        fixture.late.shift()?.resolve(textReply(200, 'too late'));
        // A round trip after the settled promise's turn: the server is alive and answered nothing for it.
        expect((await once(request('GET', '/v1/echo'))).status).toBe(200);
        expect(fixture.records.filter((r) => r.route === '/v1/late').length).toBe(answered);
      });

      it('streams a body chunk by chunk until the stream ends it; the connection then serves the next request', async () => {
        const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
        try {
          const opened = fixture.streamOpened.next();
          const chunks: string[] = [];
          const firstChunk = new Signal();
          const done = new Promise<{ status: number; type: string | undefined; chunked: string | undefined }>(
            (resolve, reject) => {
              const req = httpGet({ port: server.port, host: '127.0.0.1', path: '/v1/stream', agent }, (res) => {
                res.setEncoding('utf8');
                res.on('data', (chunk: string) => {
                  chunks.push(chunk);
                  firstChunk.fire();
                });
                res.on('end', () =>
                  resolve({
                    status: res.statusCode ?? 0,
                    type: res.headers['content-type'],
                    chunked: res.headers['transfer-encoding'],
                  }),
                );
              });
              req.on('error', reject);
            },
          );
          await opened;
          const sink = fixture.sinks.at(-1) as StreamSink;
          const first = firstChunk.next();
          expect(sink.write('one\n')).toBe(true);
          await first;
          sink.write('two\n');
          sink.end();
          expect(await done).toEqual({ status: 200, type: 'text/plain; charset=utf-8', chunked: 'chunked' });
          expect(chunks.join('')).toBe('one\ntwo\n');
          const next = await new Promise<string>((resolve, reject) => {
            httpGet({ port: server.port, host: '127.0.0.1', path: '/v1/echo?name=after', agent }, (res) => {
              let body = '';
              res.setEncoding('utf8');
              res.on('data', (chunk: string) => (body += chunk));
              res.on('end', () => resolve(body));
            }).on('error', reject);
          });
          expect(next).toBe('hello after');
        } finally {
          agent.destroy();
        }
      });

      it('tells a stream its client went away, and writes nothing for it after', async () => {
        const client = await open();
        const opened = fixture.streamOpened.next();
        client.send(request('GET', '/v1/stream'));
        await opened;
        const sink = fixture.sinks.at(-1) as StreamSink;
        sink.write('before\n');
        const closed = fixture.streamClosed.next();
        client.destroy();
        await closed;
        // A round trip after: the server is alive.
        expect((await once(request('GET', '/v1/echo'))).status).toBe(200);
      });

      const SMUGGLED = 'PUT /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nz';
      const refusedWith = async (raw: string, status: number, text: RegExp): Promise<void> => {
        const before = fixture.calls.get('echo PUT') ?? 0;
        const client = await open();
        client.send(raw);
        const responses = await client.rest();
        expect(responses.map((r) => r.status)).toEqual([status]);
        expect(responses[0]?.headers.connection).toBe('close');
        expect(responses[0]?.body).toMatch(text);
        expectCommon(responses[0] as WireResponse);
        expect(fixture.calls.get('echo PUT') ?? 0).toBe(before);
      };

      it('refuses unsound framing and closes, running neither the request nor one smuggled behind it', async () => {
        await refusedWith(
          `PUT /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello${SMUGGLED}`,
          400,
          /Content-Length/,
        );
        await refusedWith(
          `PUT /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello${SMUGGLED}`,
          400,
          /Content-Length/,
        );
        await refusedWith(
          `PUT /v1/kv HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello${SMUGGLED}`,
          400,
          /Content-Length/,
        );
        await refusedWith(
          `PUT /v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n${SMUGGLED}`,
          501,
          /not supported/,
        );
        await refusedWith(
          `PUT /v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n3\r\nabc\r\n0\r\n\r\n${SMUGGLED}`,
          400,
          /Transfer-Encoding/,
        );
      });

      /** Refused by the transport's parser: on uWS its own bare answer, so only the status and the close are checked. */
      const refusedByParser = async (raw: string, status: number, text: RegExp): Promise<void> => {
        if (transport.parser === 'llhttp') return refusedWith(raw, status, text);
        const before = fixture.calls.get('echo PUT') ?? 0;
        const client = await open();
        client.send(raw);
        const responses = await client.rest();
        expect(responses.map((r) => [r.status, r.headers.connection])).toEqual([[status, 'close']]);
        expect(fixture.calls.get('echo PUT') ?? 0).toBe(before);
      };

      /**
       * Malformed requests: llhttp answers each at once (400 and a close, or the request it can still
       * read); uWS v20.51's parser answers a request line it cannot parse 505 itself and waits on
       * the rest until its 10 s idle timeout (docs/decisions.md D18). Nothing is applied either way.
       */
      const CLIENT_HELLO = Buffer.from(`16030100a5010000a10303${'00'.repeat(64)}`, 'hex');
      const MALFORMED: readonly { name: string; raw: string | Buffer; llhttp: number[]; uws: number[] | 'waits' }[] = [
        {
          name: 'a raw space in the path',
          raw: 'PUT /v1/echo x HTTP/1.1\r\nHost: x\r\n\r\n',
          llhttp: [400],
          uws: [505],
        },
        { name: 'a tab in the path', raw: 'PUT /v1/echo\tx HTTP/1.1\r\nHost: x\r\n\r\n', llhttp: [400], uws: [505] },
        { name: 'a NUL in the path', raw: 'PUT /v1/echo\0x HTTP/1.1\r\nHost: x\r\n\r\n', llhttp: [400], uws: [505] },
        { name: 'HTTP/1.2', raw: 'PUT /v1/echo HTTP/1.2\r\nHost: x\r\n\r\n', llhttp: [400], uws: [505] },
        { name: 'HTTX/1.1', raw: 'PUT /v1/echo HTTX/1.1\r\nHost: x\r\n\r\n', llhttp: [400], uws: [505] },
        {
          name: 'LF-only line ends',
          raw: 'PUT /v1/echo HTTP/1.1\nHost: x\nContent-Length: 1\n\nz',
          llhttp: [400],
          uws: [505],
        },
        { name: 'binary garbage', raw: '\x00\x01\x02\xff\xfe garbage\r\n\r\n', llhttp: [400], uws: [505] },
        { name: 'a TLS ClientHello', raw: CLIENT_HELLO, llhttp: [400], uws: [505] },
        {
          name: 'a bare CR in a header value',
          raw: 'PUT /v1/echo HTTP/1.1\r\nHost: x\r\nX-A: a\rb\r\n\r\n',
          llhttp: [400],
          uws: 'waits',
        },
        {
          name: 'empty lines before the request line',
          raw: `\r\n\r\n${request('PUT', '/v1/echo', 'z')}`,
          llhttp: [200],
          uws: 'waits',
        },
        {
          name: 'a body followed by an extra CRLF and a request',
          raw: `${request('GET', '/v1/echo')}\r\n${request('GET', '/v1/echo')}`,
          llhttp: [200, 200],
          uws: [200],
        },
      ];

      it('answers malformed requests at once (uWS: its own 505, or it waits), applying nothing unanswered', async () => {
        for (const { name, raw, llhttp, uws } of MALFORMED) {
          const before = fixture.calls.get('echo PUT') ?? 0;
          const client = await open();
          client.send(raw);
          const expected = transport.parser === 'llhttp' ? llhttp : uws;
          if (expected !== 'waits') {
            const responses = await upTo(client, expected.length);
            expect(
              responses.map((r) => r.status),
              name,
            ).toEqual(expected);
            if (expected.every((status) => status >= 400)) await client.closed;
            const answered = responses.filter((r) => r.body.startsWith('got ')).length;
            expect((fixture.calls.get('echo PUT') ?? 0) - before, name).toBe(answered);
            if (name === 'a TLS ClientHello' && transport.parser === 'llhttp') {
              expect(responses[0]?.body).toMatch(/TLS handshake to an HTTP port/);
            }
          } else {
            // A round trip on another connection: the server has read these bytes, and answered nothing.
            expect((await once(request('GET', '/v1/echo'))).status).toBe(200);
            expect((fixture.calls.get('echo PUT') ?? 0) - before, name).toBe(0);
            client.destroy();
          }
        }
      });

      it('answers an HTTP/1.1 request without Host 400 and closes', async () => {
        await refusedByParser(`PUT /v1/echo HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc${SMUGGLED}`, 400, /Host/);
      });

      it('answers a request with two Host headers 400 and closes (RFC 9112 section 3.2)', async () => {
        await refusedByParser(
          `PUT /v1/echo HTTP/1.1\r\nHost: x\r\nHost: y\r\nContent-Length: 3\r\n\r\nabc${SMUGGLED}`,
          400,
          /more than one Host/,
        );
      });

      it('refuses a lowercase or unknown method and closes: 400 from llhttp, 501 on uWS', async () => {
        const status = transport.parser === 'uws' ? 501 : 400;
        await refusedWith(
          `put /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc${SMUGGLED}`,
          status,
          /method/i,
        );
        await refusedWith(
          `FROB /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc${SMUGGLED}`,
          status,
          /method/i,
        );
      });

      it('on uWS: refuses a chunked body 411 and closes, the handler never run', async ({ skip }) => {
        if (transport.parser !== 'uws') skip('node:http takes chunked bodies: tested above');
        await refusedWith(
          `PUT /v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n${SMUGGLED}`,
          411,
          /Content-Length only/,
        );
        await refusedWith(
          `PUT /v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n`,
          411,
          /Content-Length only/,
        );
      });

      it('on uWS: answers HTTP/1.0 505 at once and closes', async ({ skip }) => {
        if (transport.parser !== 'uws') skip('node:http answers HTTP/1.0: tested below');
        await refusedByParser('PUT /v1/echo HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc', 505, /HTTP Version/);
      });

      it('answers HTTP/1.0, closing unless keep-alive was asked', async ({ skip }) => {
        if (transport.parser === 'uws') skip('uWS answers HTTP/1.0 505: tested above');
        const closing = await open();
        closing.send('GET /v1/echo HTTP/1.0\r\n\r\n');
        expect((await closing.rest()).map((r) => r.body)).toEqual(['hello ']);
        const kept = await open();
        expect((await kept.exchange('GET /v1/echo HTTP/1.0\r\nConnection: keep-alive\r\n\r\n')).status).toBe(200);
        expect((await kept.exchange('GET /v1/kv/a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n')).body).toBe('key a');
      });

      it('records each answered request by route pattern, method and status, and logs its line at debug', async ({
        skip,
      }) => {
        if (!traced) skip('the trace is off on this server');
        fixture.records.length = 0;
        fixture.logs.length = 0;
        await once(request('GET', '/v1/kv/some/key?token=secret&x=1'));
        await once(request('GET', '/v1/kv'));
        await once(request('GET', '/nowhere'));
        await once(request('DELETE', '/v1/echo'));
        await refusedWith(
          `PUT /v1/echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n`,
          501,
          /not supported/,
        );
        expect(fixture.records).toEqual([
          { route: '/v1/kv/', method: 'GET', status: 200 },
          { route: '/v1/kv', method: 'GET', status: 301 },
          { route: 'unmatched', method: 'GET', status: 404 },
          { route: '/v1/echo', method: 'DELETE', status: 405 },
          { route: '/v1/echo', method: 'PUT', status: 501 },
        ]);
        const lines = fixture.logs.filter((l) => l.msg === 'Request finished');
        expect(lines.map((l) => [l.obj.method, l.obj.url, l.obj.status])).toEqual([
          ['GET', '/v1/kv/some/key?token=<hidden>&x=1', 200],
          ['GET', '/v1/kv', 301],
          ['GET', '/nowhere', 404],
          ['DELETE', '/v1/echo', 405],
          ['PUT', '/v1/echo', 501],
        ]);
        expect(String(lines[0]?.obj.from)).toMatch(/127\.0\.0\.1/);
        expect(String(lines[0]?.obj.latency)).toMatch(/^\d+\.\d{3}ms$/);
      });
    });
  }
}
