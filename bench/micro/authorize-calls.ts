// Instruction counts of the authorize route per call: N POSTs through the real request flow
// (src/http/request-flow.ts: framing, body read, guard, handler, reply) with the 10,000
// intentions of bench/micro/authorize.ts, no sockets. Counted under callgrind, whose counts repeat
// run to run where times on a shared machine do not; the measured calls run between two calls of
// os.loadavg(), so `--dump-before` on its native function cuts out exactly them:
//   valgrind --tool=callgrind --dump-before='*GetLoadAvg*' node --no-concurrent-recompilation \
//     dist/bench/micro/authorize-calls.js --mode distinct
// The second dump (callgrind.out.<pid>.2) holds the measured calls: its total over `--calls` is the
// figure per call (bench/HISTORY.md, "Authorize"). Without --no-concurrent-recompilation, valgrind's
// one-thread-at-a-time scheduling can leave the optimizing compiler's job unfinished, and a run
// counts baseline code (one run: 43,991 a call against 13,449); with it, four runs of one build
// agree within 0.3%. A major GC that lands among them adds ~17,000 a call, so compare runs, not
// one run (forcing one first with --expose-gc moves its sweep in).
// `--digest` prints a hash of every reply instead, so two builds can be shown to answer alike.
// Modes: `distinct`, every measured body new (a serial never sent before, the (source, target)
// pairs those of the warm-up); `one`, one body over and over; `cold`, bodies whose pairs are new too.
import { createHash } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { AclResolver } from '../../src/acl/resolver.js';
import { IntentionStore } from '../../src/connect/intentions/store.js';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/log.js';
import { Metrics } from '../../src/core/metrics.js';
import { aclGate } from '../../src/http/api.js';
import { authorizeRoutes } from '../../src/http/handlers/authorize.js';
import type { Reply } from '../../src/http/reply.js';
import { RequestFlow, type TransportIo } from '../../src/http/request-flow.js';
import type { RequestHead } from '../../src/http/request.js';
import { compileRoutes, type CompiledRoute } from '../../src/http/routes.js';
import { openEmbeddedStore } from '../../src/state/embedded/index.js';
import type { StateStore } from '../../src/state/types.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { AUTHORIZE_BODY, benchIntentions, distinctAuthorizeBodies } from './authorize.js';

type Mode = 'distinct' | 'one' | 'cold';

/** The replies the fake transport was handed, folded into a hash when asked to. */
class CollectingIo implements TransportIo<number, Buffer> {
  digest: ReturnType<typeof createHash> | undefined;
  answered = 0;
  write(_handle: number, reply: Reply): void {
    this.answered++;
    if (this.digest === undefined) return;
    this.digest.update(`${reply.status} ${reply.contentType ?? ''} ${JSON.stringify(reply.headers ?? [])}\n`);
    if (reply.body !== undefined) this.digest.update(reply.body);
    this.digest.update('\n');
  }
  writeLate(handle: number, reply: Reply): void {
    this.write(handle, reply);
  }
  refuse(handle: number, reply: Reply): void {
    this.write(handle, reply);
  }
  onGone(): void {}
  readBody(handle: number, piece: (chunk: Buffer, isLast: boolean) => void): void {
    piece(this.bodies[handle] as Buffer, true);
  }
  // uWS lends its chunk only for the callback, so its adapter copies it: so does this one.
  keep(chunk: Buffer): Buffer {
    return Buffer.from(chunk);
  }
  // Authorize changes no state: never held.
  hold(_handle: number, run: () => void): void {
    run();
  }
  holdReads(): void {}
  release(): void {}
  constructor(readonly bodies: readonly Buffer[]) {}
}

export interface Harness {
  call(handle: number): void;
  io: CollectingIo;
  close(): void;
}

export interface HarnessOptions {
  /** ACLs on (default deny) with this token presented, its rows written by `seed`; absent: ACLs off. */
  readonly acl?: { readonly token: string; readonly seed: (store: StateStore) => Promise<void> } | undefined;
}

/** The route compiled once, a fake transport handing it `bodies[handle]` (authorize-token.ts uses it too). */
export async function harness(bodies: readonly Buffer[], options: HarnessOptions = {}): Promise<Harness> {
  const store = await openEmbeddedStore({ log: silentLogger });
  await store.commit(benchIntentions());
  await options.acl?.seed(store);
  const intentions = new IntentionStore(store, systemClock);
  const acl = { enabled: options.acl !== undefined, defaultPolicy: options.acl ? 'deny' : 'allow' } as const;
  const resolver = new AclResolver(store, { ...acl, datacenter: 'dc1' }, systemClock);
  const routes = authorizeRoutes({
    intentions,
    connectEnabled: true,
    cacheMaxEntries: 10_000,
    metrics: new Metrics(systemClock),
  });
  const route = compileRoutes(
    routes,
    aclGate(resolver, () => undefined),
    1 << 20,
  )[0] as CompiledRoute;
  const io = new CollectingIo(bodies);
  const flow = new RequestFlow(io, silentLogger, undefined);
  const lengths = bodies.map((b) => String(b.length));
  return {
    io,
    // What the adapter does per request: fill the framing record, copy the head, hand it over.
    call(handle) {
      flow.framing.contentLengths = 1;
      flow.framing.contentLength = lengths[handle] as string;
      flow.framing.transferEncoding = undefined;
      const head: RequestHead = {
        method: 'POST',
        path: '/v1/agent/connect/authorize',
        rawQuery: '',
        tokenHeader: options.acl?.token ?? '',
        authorization: '',
        namespaceHeader: '',
        closeConnection: false,
      };
      flow.route(handle, route, head, undefined);
    },
    close() {
      intentions.close();
      void store.close();
    },
  };
}

/** Bodies whose (source, target) pairs no warm-up body used: a source service renamed per call. */
function coldBodies(round: number): string[] {
  return distinctAuthorizeBodies(round).map((b, i) => b.replace(/\/svc\/([^"]+)"/, `/svc/$1-cold${i}"`));
}

/** Warm-up bodies first (`warmup` of them), then the `calls` measured ones. */
function bodiesFor(mode: Mode, warmup: number, calls: number): Buffer[] {
  const out: string[] = [];
  const take = (source: (round: number) => string[], count: number, firstRound: number): void => {
    for (let round = firstRound; count > 0; round++) {
      const batch = source(round);
      out.push(...batch.slice(0, count));
      count -= batch.length;
    }
  };
  if (mode === 'one') return Array.from({ length: warmup + calls }, () => Buffer.from(AUTHORIZE_BODY));
  take(distinctAuthorizeBodies, warmup, 1);
  take(mode === 'cold' ? coldBodies : distinctAuthorizeBodies, calls, 1000);
  return out.map((b) => Buffer.from(b));
}

/** Every reply of the 10,000 distinct bodies, the one body and a few refusals, hashed. */
async function replyDigest(): Promise<string> {
  const odd = [
    '',
    '[]',
    '{"Target":"svc-5"}',
    '{"Target":"svc-5","ClientCertURI":"spiffe://td/ns/ns-5/dc/dc1/svc/web","ClientCertSerial":7}',
    '{"target":"svc-5","clientcerturi":"spiffe://td/ns/ns-5/dc/dc1/svc/src-0","Extra":1}',
    '{"target":"svc-5","clientcerturi":"spiffe://td/ns/ns-5/dc/dc1/svc/src-0"}',
    '{"Target":"svc-5","ClientCertURI":"spiffe://td/ap/part/ns/ns-5/dc/dc1/svc/src-0"}',
    '{"Target":"svc-5","ClientCertURI":"spiffe://td/agent/client/dc/dc1/id/n1"}',
    '{"Target":"svc-5","ClientCertURI":"SPIFFE://td/ns/ns-5/dc/dc1/svc/src%2D0"}',
    '{"Target":"svc-5","ClientCertURI":"http://td/ns/ns-5/dc/dc1/svc/src-0"}',
    '{"Target":"svc-5","Namespace":"","ClientCertURI":"spiffe://td/ns/default/dc/dc1/svc/src-0"}',
    '{"Target":"svc-5","ClientCertURI":"spiffe://td/ns/ns-5/dc/dc1/svc/src-0"} ',
    '{"Target":"svc-5","ClientCertURI":"spiffe://td/ns/ns-5/dc/dc1/svc/src-0"}x',
  ];
  const strings = [
    ...distinctAuthorizeBodies(),
    AUTHORIZE_BODY,
    ...odd,
    ...distinctAuthorizeBodies(),
    AUTHORIZE_BODY,
    ...odd,
  ];
  const bodies = strings.map((s) => Buffer.from(s));
  const h = await harness(bodies);
  h.io.digest = createHash('sha256');
  for (let i = 0; i < bodies.length; i++) h.call(i);
  h.close();
  return `${h.io.digest.digest('hex')} over ${h.io.answered} replies`;
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    const { values } = parseArgs({
      options: {
        mode: { type: 'string', default: 'distinct' },
        calls: { type: 'string', default: '10000' },
        warmup: { type: 'string', default: '20000' },
        digest: { type: 'boolean' },
      },
    });
    if (values.digest === true) {
      process.stdout.write(`${await replyDigest()}\n`);
      return;
    }
    const mode = values.mode as Mode;
    if (mode !== 'distinct' && mode !== 'one' && mode !== 'cold')
      throw new Error(`--mode wants distinct, one or cold, got ${mode}`);
    const warmup = Number(values.warmup);
    const calls = Number(values.calls);
    const bodies = bodiesFor(mode, warmup, calls);
    const h = await harness(bodies);
    for (let i = 0; i < warmup; i++) h.call(i);
    loadavg(); // callgrind's cut: the measured calls start here
    const start = process.hrtime.bigint();
    for (let i = warmup; i < warmup + calls; i++) h.call(i);
    const ns = Number(process.hrtime.bigint() - start);
    loadavg(); // and end here
    h.close();
    process.stdout.write(
      `${mode}: ${calls} calls after ${warmup} warm-up, ${(ns / calls).toFixed(0)} ns/call (time: indicative only)\n`,
    );
  });
}
