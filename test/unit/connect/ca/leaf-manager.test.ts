// The leaf manager against the real CA (in-process signer) with a fake clock: single-flight,
// cache hits, renewal in the 60-90 % window, re-issue after a root change within the spread, the
// issue queue's bound and order, and blocking reads, which park in the agent's one blocking-query
// machinery (the leaf route over BlockingQueries): they time out, wake, go away and are released
// there, and a non-blocking read never waits on a blocking one.
import { describe, expect, it } from 'vitest';
import { MAX_ISSUING } from '../../../../src/connect/ca/issue-queue.js';
import { LeafManager, type LeafAnswer, type LeafSource } from '../../../../src/connect/ca/leaf-manager.js';
import { silentLogger } from '../../../../src/core/log.js';
import { Metrics } from '../../../../src/core/metrics.js';
import { BlockingQueries } from '../../../../src/http/blocking.js';
import { brandHeaders } from '../../../../src/http/brand.js';
import { connectCaRoutes } from '../../../../src/http/handlers/connect-ca.js';
import type { Reply } from '../../../../src/http/reply.js';
import { Parked } from '../../../../src/http/blocking.js';
import { request } from '../../http/support.js';
import { HOUR, caFixture, seededRandom, settle, type CaFixture } from './support.js';
import type { MethodSpec } from '../../../../src/http/routes.js';
import { agentError } from '../../../../src/core/errors.js';

interface Setup extends CaFixture {
  readonly leaves: LeafManager;
  readonly blocking: BlockingQueries;
  /** GET /v1/agent/connect/ca/leaf/<service>, through the route and the blocking queries. */
  readonly read: (service: string, minIndex?: number, waitMs?: number) => LeafRead;
}

/** What a read got (once answered), and how its client goes away. */
interface LeafRead {
  readonly answer: { serial: string; index: number; hit: boolean } | undefined;
  readonly abort: () => void;
}

async function setup(options: { spreadMs?: number; maxEntries?: number; random?: () => number } = {}): Promise<Setup> {
  const random = options.random ?? seededRandom();
  const f = await caFixture({}, random);
  f.roots.get();
  const leaves = new LeafManager({
    source: f.manager,
    roots: f.roots,
    clock: f.clock,
    random,
    log: silentLogger,
    maxEntries: options.maxEntries ?? 100,
    idleTtlMs: 72 * HOUR,
    rootChangeSpreadMs: options.spreadMs ?? 30_000,
  });
  const blocking = new BlockingQueries(f.store, f.clock, (err) => {
    throw err;
  });
  const routes = connectCaRoutes({
    ca: { manager: f.manager, roots: f.roots, leaves },
    blocking,
    brand: brandHeaders('Svc'),
    limits: { defaultQueryTimeMs: 300_000, maxQueryTimeMs: 600_000 },
    clock: f.clock,
    random: () => 0, // no jitter: a wait ends exactly when asked
    metrics: new Metrics(f.clock),
  });
  const handler = (routes.find((r) => r.path === '/v1/agent/connect/ca/leaf/')!.methods.GET as MethodSpec).handler;
  const identity = { authorizer: undefined as never, accessorId: 'a', anonymous: false, namespace: 'default' };
  const read = (service: string, minIndex = 0, waitMs = 300_000): LeafRead => {
    const req = request(
      {
        path: `/v1/agent/connect/ca/leaf/${service}`,
        rawQuery: minIndex > 0 ? `index=${minIndex}&wait=${waitMs}ms` : '',
      },
      service,
    );
    const outcome = handler(req, identity, undefined);
    const box: { answer: LeafRead['answer']; abort: () => void } = { answer: undefined, abort: () => req.abort() };
    const reply = outcome instanceof Parked ? outcome.wait() : Promise.resolve(outcome);
    void reply.then((r) => (box.answer = answerOf(r)));
    return box;
  };
  return { ...f, leaves, blocking, read };
}

function answerOf(reply: Reply): { serial: string; index: number; hit: boolean } {
  const body = JSON.parse(Buffer.from(reply.body as Uint8Array).toString()) as {
    SerialNumber: string;
    ModifyIndex: number;
  };
  const cache = reply.headers?.find(([name]) => name === 'X-Cache')?.[1];
  return { serial: body.SerialNumber, index: body.ModifyIndex, hit: cache === 'HIT' };
}

/** A manager over the fixture's roots and clock whose leaves come from `source`. */
function managerOver(f: CaFixture, source: LeafSource, nextTurn?: (fn: () => void) => void): LeafManager {
  return new LeafManager({
    source,
    roots: f.roots,
    clock: f.clock,
    random: seededRandom(),
    log: silentLogger,
    maxEntries: 1000,
    idleTtlMs: 72 * HOUR,
    rootChangeSpreadMs: 0,
    ...(nextTurn ? { nextTurn } : {}),
  });
}

describe('LeafManager', () => {
  it('issues once for concurrent first requests, then serves the cached leaf', async () => {
    const s = await setup();
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => s.leaves.get('default', 'web')));
    expect(s.signer.signed).toBe(1);
    expect(new Set(answers.map((a) => a.leaf.serial)).size).toBe(1);
    expect(answers.every((a) => !a.hit)).toBe(true);
    const again = s.leaves.get('default', 'web');
    expect(again).not.toBeInstanceOf(Promise);
    expect(again).toMatchObject({ hit: true, leaf: answers[0]!.leaf });
    // Another namespace is another leaf.
    const other = await s.leaves.get('team', 'web');
    expect(other.leaf.uri).toContain('/ns/team/');
    expect(s.signer.signed).toBe(2);
  });

  it('renews a non-blocking read once the leaf passes its renewal time', async () => {
    const s = await setup();
    const first = await s.leaves.get('default', 'web');
    const lifetime = first.leaf.validBefore - first.leaf.validAfter;
    expect(first.leaf.renewAt).toBeGreaterThanOrEqual(first.leaf.validAfter + 0.6 * lifetime);
    expect(first.leaf.renewAt).toBeLessThanOrEqual(first.leaf.validAfter + 0.9 * lifetime);
    s.clock.advance(first.leaf.renewAt - s.clock.now() - 1);
    expect((s.leaves.get('default', 'web') as LeafAnswer).hit).toBe(true);
    s.clock.advance(1);
    const renewed = await s.leaves.get('default', 'web');
    expect(renewed.hit).toBe(false);
    expect(renewed.leaf.serial).toBeGreaterThan(first.leaf.serial);
  });

  it('parks a blocking read in the blocking queries and wakes it with the renewed leaf (a MISS)', async () => {
    const s = await setup();
    const first = await s.leaves.get('default', 'web');
    s.clock.advance(first.leaf.renewAt - s.clock.now() - 300_000);
    const parked = s.read('web', first.leaf.index, 600_000);
    await settle();
    expect(s.blocking.parked).toBe(1);
    s.clock.advance(first.leaf.renewAt - s.clock.now() - 1000);
    await settle();
    expect(parked.answer).toBeUndefined();
    s.clock.advance(1000);
    await settle();
    expect(parked.answer?.hit).toBe(false);
    expect(parked.answer!.index).toBeGreaterThan(first.leaf.index);
    expect(s.blocking.parked).toBe(0);
    expect(s.signer.signed).toBe(2);
  });

  it('answers a blocking read at its timeout with the same leaf (a HIT)', async () => {
    const s = await setup();
    const first = await s.leaves.get('default', 'web');
    const parked = s.read('web', first.leaf.index, 5000);
    s.clock.advance(4999);
    await settle();
    expect(parked.answer).toBeUndefined();
    s.clock.advance(1);
    await settle();
    expect(parked.answer).toEqual({ serial: first.leaf.serialNumber, index: first.leaf.index, hit: true });
    expect(s.blocking.parked).toBe(0);
    // A stale index answers at once.
    const stale = s.read('web', first.leaf.index - 1);
    await settle(1);
    expect(stale.answer).toEqual({ serial: first.leaf.serialNumber, index: first.leaf.index, hit: true });
    expect(s.blocking.parked).toBe(0);
  });

  it('never makes a non-blocking read wait behind a blocking one (#12048)', async () => {
    const s = await setup();
    const first = await s.leaves.get('default', 'web');
    const parked = s.read('web', first.leaf.index);
    const quick = s.leaves.get('default', 'web');
    expect(quick).toEqual({ leaf: first.leaf, hit: true });
    const quickGet = s.read('web');
    await settle(1);
    expect(quickGet.answer).toMatchObject({ serial: first.leaf.serialNumber, hit: true });
    expect(parked.answer).toBeUndefined();
  });

  it('re-issues for parked watchers within the spread after a root change', async () => {
    const s = await setup({ spreadMs: 30_000, random: () => 0.5 });
    const first = await s.leaves.get('default', 'web');
    const parked = s.read('web', first.leaf.index);
    await s.manager.updateConfiguration({
      provider: 'consul',
      config: { PrivateKeyBits: 384, CSRMaxPerSecond: 0 },
      state: null,
      forceWithoutCrossSigning: false,
    });
    await settle(); // the roots watch fires and the roots cache tells the manager
    const newKey = s.roots.get().snapshot.activeSigningKeyId;
    expect(newKey).not.toBe(first.leaf.signingKeyId);
    s.clock.advance(14_999);
    await settle();
    expect(parked.answer).toBeUndefined();
    s.clock.advance(1);
    await settle();
    expect(parked.answer?.hit).toBe(false);
    const renewed = s.leaves.get('default', 'web') as LeafAnswer;
    expect(parked.answer!.serial).toBe(renewed.leaf.serialNumber);
    expect(renewed.leaf.signingKeyId).toBe(newKey);
    expect(renewed.leaf.certPem.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
  });

  it('re-issues at once after a root change with a zero spread, and on the next non-blocking read', async () => {
    const s = await setup({ spreadMs: 0 });
    const a = await s.leaves.get('default', 'a');
    const b = await s.leaves.get('default', 'b');
    const parked = s.read('a', a.leaf.index);
    await s.manager.updateConfiguration({
      provider: 'consul',
      config: { PrivateKeyBits: 384, CSRMaxPerSecond: 0 },
      state: null,
      forceWithoutCrossSigning: false,
    });
    await settle();
    s.clock.advance(0);
    await settle();
    expect(parked.answer?.hit).toBe(false);
    expect((s.leaves.get('default', 'a') as LeafAnswer).leaf.signingKeyId).not.toBe(a.leaf.signingKeyId);
    const nextB = await s.leaves.get('default', 'b');
    expect(nextB.hit).toBe(false);
    expect(nextB.leaf.signingKeyId).not.toBe(b.leaf.signingKeyId);
  });

  it('forgets a parked read whose client went away, and stops renewing a leaf nobody watches', async () => {
    const s = await setup();
    const first = await s.leaves.get('default', 'web');
    const parked = s.read('web', first.leaf.index, 10_000);
    expect(s.blocking.parked).toBe(1);
    const timers = s.clock.pendingTimers;
    parked.abort();
    expect(s.blocking.parked).toBe(0);
    expect(s.clock.pendingTimers).toBeLessThan(timers); // the wait's and the renewal's timers are gone
    s.clock.advance(first.leaf.renewAt);
    await settle();
    expect(parked.answer).toBeUndefined();
    expect(s.signer.signed).toBe(1); // nobody watching: no background renewal
  });

  it('shares one watch of the leaf among the reads parked on it; the last one gone disarms it', async () => {
    const s = await setup();
    const first = await s.leaves.get('default', 'web');
    const one = s.read('web', first.leaf.index, 10_000);
    const two = s.read('web', first.leaf.index, 20_000);
    expect(s.blocking.parked).toBe(2);
    one.abort();
    s.clock.advance(10_000);
    await settle();
    expect(one.answer).toBeUndefined();
    expect(two.answer).toBeUndefined();
    s.clock.advance(10_000);
    await settle();
    expect(two.answer?.hit).toBe(true);
    expect(s.blocking.parked).toBe(0);
    s.clock.advance(first.leaf.renewAt);
    await settle();
    expect(s.signer.signed).toBe(1);
  });

  it('keeps a failed background renewal out of the parked reads and retries within 30 s', async () => {
    const f = await caFixture();
    f.roots.get();
    let failing = false;
    const leaves = managerOver(f, {
      signLeaf: (ns, svc) => (failing ? Promise.reject(new Error('signer down')) : f.manager.signLeaf(ns, svc)),
    });
    const first = await leaves.get('default', 'web');
    const watch = leaves.waitFor('default', 'web', first.leaf.index)!;
    let woken = 0;
    watch.watchOnce(() => woken++);
    failing = true;
    f.clock.advance(first.leaf.renewAt - f.clock.now());
    await settle();
    expect(woken).toBe(0);
    expect(watch.leaf).toBe(first.leaf); // the old leaf stays
    failing = false;
    f.clock.advance(30_000);
    await settle();
    expect(woken).toBe(1);
    expect(watch.leaf.index).toBeGreaterThan(first.leaf.index);
  });

  it('answers a signing whose commit went unanswered as etcd unable to sign, not as a write that may have been applied', async () => {
    const f = await caFixture();
    f.roots.get();
    const leaves = managerOver(f, {
      signLeaf: () => Promise.reject(agentError('STATE_WRITE_OUTCOME_UNKNOWN')),
    });
    const failure = await Promise.resolve(leaves.get('default', 'web')).then(
      () => undefined,
      (err: unknown) => err as { code: string },
    );
    expect(failure?.code).toBe('STATE_NO_LEADER');
  });

  it('keeps at most maxEntries leaves', async () => {
    const s = await setup({ maxEntries: 3 });
    for (const name of ['a', 'b', 'c', 'd']) await s.leaves.get('default', name);
    expect(s.leaves.size).toBe(3);
    await s.leaves.get('default', 'a'); // evicted: issued again
    expect(s.signer.signed).toBe(5);
  });

  it('passes a rate-limit failure of a first issuance to the caller', async () => {
    const s = await setup();
    await s.manager.updateConfiguration({
      provider: 'consul',
      config: { CSRMaxPerSecond: 0.5 },
      state: null,
      forceWithoutCrossSigning: false,
    });
    await s.leaves.get('default', 'a');
    await expect(s.leaves.get('default', 'b')).rejects.toMatchObject({ code: 'CSR_RATE_LIMITED' });
    // The failure is not cached: the next try after the interval succeeds.
    s.clock.advance(2000);
    expect((await s.leaves.get('default', 'b')).hit).toBe(false);
  });

  it('leaves parked reads to the blocking queries on close: they are released with the leaf they have', async () => {
    const s = await setup();
    const first = await s.leaves.get('default', 'web');
    const parked = s.read('web', first.leaf.index);
    s.blocking.releaseAll();
    s.leaves.close();
    await settle();
    expect(parked.answer).toEqual({ serial: first.leaf.serialNumber, index: first.leaf.index, hit: true });
    expect(s.blocking.parked).toBe(0);
    // Closed: no renewal timer left, and a blocking read no longer parks.
    expect(s.leaves.waitFor('default', 'web', first.leaf.index)).toBeUndefined();
    const late = s.read('web', first.leaf.index);
    await settle(1);
    expect(late.answer?.hit).toBe(true);
  });

  it('keeps at most MAX_ISSUING issuances in flight; the rest start in arrival order as they settle', async () => {
    const f = await caFixture();
    f.roots.get();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let outstanding = 0;
    let most = 0;
    const started: string[] = [];
    const leaves = managerOver(f, {
      signLeaf: async (namespace, service) => {
        started.push(service);
        most = Math.max(most, ++outstanding);
        await gate;
        try {
          return await f.manager.signLeaf(namespace, service);
        } finally {
          outstanding--;
        }
      },
    });
    const services = Array.from({ length: MAX_ISSUING + 100 }, (_, i) => `svc-${i}`);
    const answers = Promise.all(services.map((service) => leaves.get('default', service)));
    await settle(MAX_ISSUING); // far more turns than starting MAX_ISSUING takes
    expect(started).toHaveLength(MAX_ISSUING);
    release();
    const all = await answers;
    expect(most).toBe(MAX_ISSUING);
    expect(started).toEqual(services);
    expect(all.map((a) => a.leaf.service)).toEqual(services);
  });

  it('gives every caller of a failed issuance its error, frees its slot, and caches nothing', async () => {
    const f = await caFixture();
    f.roots.get();
    let failNext = MAX_ISSUING; // enough failures to fill every slot, were they not given back
    const leaves = managerOver(f, {
      signLeaf: (namespace, service) => {
        if (failNext-- > 0) throw new Error(`no signer for ${service}`); // thrown, not rejected
        return f.manager.signLeaf(namespace, service);
      },
    });
    const failing = Array.from({ length: MAX_ISSUING }, (_, i) => [
      leaves.get('default', `svc-${i}`),
      leaves.get('default', `svc-${i}`),
    ]);
    for (const [one, two] of failing) {
      await expect(one).rejects.toThrow(/no signer for svc-/);
      await expect(two).rejects.toThrow(/no signer for svc-/);
    }
    expect((await leaves.get('default', 'svc-0')).hit).toBe(false);
    expect((await leaves.get('default', 'svc-0')).hit).toBe(true);
  });
});
