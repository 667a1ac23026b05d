// The leaf manager against the real CA (in-process signer) with a fake clock: single-flight,
// cache hits, renewal in the 60-90 % window, re-issue after a root change within the spread,
// blocking reads that time out or wake, and a non-blocking read never waiting on a blocking one.
import { describe, expect, it } from 'vitest';
import { LeafManager, MAX_ISSUING, type LeafAnswer, type LeafRead, type LeafSource } from '../../../../src/connect/ca/leaf-manager.js';
import { silentLogger } from '../../../../src/core/log.js';
import { HOUR, caFixture, seededRandom, settle, type CaFixture } from './support.js';

interface Setup extends CaFixture {
  readonly leaves: LeafManager;
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
  return { ...f, leaves };
}

const now: LeafRead = { minIndex: 0, timeoutMs: 0, onAbort: () => {} };
const blocking = (minIndex: number, timeoutMs = 300_000, onAbort: (fn: () => void) => void = () => {}): LeafRead => ({ minIndex, timeoutMs, onAbort });

/** A manager over the fixture's roots and clock whose leaves come from `source`. */
function managerOver(f: CaFixture, source: LeafSource): LeafManager {
  return new LeafManager({ source, roots: f.roots, clock: f.clock, random: seededRandom(), log: silentLogger, maxEntries: 1000, idleTtlMs: 72 * HOUR, rootChangeSpreadMs: 0 });
}

/** Tracks a pending answer without awaiting it. */
function watch(p: LeafAnswer | Promise<LeafAnswer>): { answer: LeafAnswer | undefined } {
  const box: { answer: LeafAnswer | undefined } = { answer: undefined };
  void Promise.resolve(p).then((a) => (box.answer = a));
  return box;
}

describe('LeafManager', () => {
  it('issues once for concurrent first requests, then serves the cached leaf', async () => {
    const s = await setup();
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => s.leaves.get('default', 'web', now)));
    expect(s.signer.signed).toBe(1);
    expect(new Set(answers.map((a) => a.leaf.serial)).size).toBe(1);
    expect(answers.every((a) => !a.hit)).toBe(true);
    const again = s.leaves.get('default', 'web', now);
    expect(again).not.toBeInstanceOf(Promise);
    expect(again).toMatchObject({ hit: true, leaf: answers[0]!.leaf });
    // Another namespace is another leaf.
    const other = await s.leaves.get('team', 'web', now);
    expect(other.leaf.uri).toContain('/ns/team/');
    expect(s.signer.signed).toBe(2);
  });

  it('renews a non-blocking read once the leaf passes its renewal time', async () => {
    const s = await setup();
    const first = await s.leaves.get('default', 'web', now);
    const lifetime = first.leaf.validBefore - first.leaf.validAfter;
    expect(first.leaf.renewAt).toBeGreaterThanOrEqual(first.leaf.validAfter + 0.6 * lifetime);
    expect(first.leaf.renewAt).toBeLessThanOrEqual(first.leaf.validAfter + 0.9 * lifetime);
    s.clock.advance(first.leaf.renewAt - s.clock.now() - 1);
    expect((s.leaves.get('default', 'web', now) as LeafAnswer).hit).toBe(true);
    s.clock.advance(1);
    const renewed = await s.leaves.get('default', 'web', now);
    expect(renewed.hit).toBe(false);
    expect(renewed.leaf.serial).toBeGreaterThan(first.leaf.serial);
  });

  it('wakes a blocking read with the renewed leaf at its renewal time', async () => {
    const s = await setup();
    const first = await s.leaves.get('default', 'web', now);
    const parked = watch(s.leaves.get('default', 'web', blocking(first.leaf.index, 100 * HOUR)));
    s.clock.advance(first.leaf.renewAt - s.clock.now() - 1000);
    await settle();
    expect(parked.answer).toBeUndefined();
    s.clock.advance(1000);
    await settle();
    expect(parked.answer?.hit).toBe(false);
    expect(parked.answer!.leaf.index).toBeGreaterThan(first.leaf.index);
  });

  it('answers a blocking read at its timeout with the same leaf (a HIT)', async () => {
    const s = await setup();
    const first = await s.leaves.get('default', 'web', now);
    const parked = watch(s.leaves.get('default', 'web', blocking(first.leaf.index, 5000)));
    s.clock.advance(4999);
    await settle();
    expect(parked.answer).toBeUndefined();
    s.clock.advance(1);
    await settle();
    expect(parked.answer).toEqual({ leaf: first.leaf, hit: true });
    // A stale index answers at once.
    expect(s.leaves.get('default', 'web', blocking(first.leaf.index - 1))).toEqual({ leaf: first.leaf, hit: true });
  });

  it('never makes a non-blocking read wait behind a blocking one (#12048)', async () => {
    const s = await setup();
    const first = await s.leaves.get('default', 'web', now);
    const parked = watch(s.leaves.get('default', 'web', blocking(first.leaf.index)));
    const quick = s.leaves.get('default', 'web', now);
    expect(quick).toEqual({ leaf: first.leaf, hit: true });
    expect(parked.answer).toBeUndefined();
  });

  it('re-issues for parked watchers within the spread after a root change', async () => {
    const s = await setup({ spreadMs: 30_000, random: () => 0.5 });
    const first = await s.leaves.get('default', 'web', now);
    const parked = watch(s.leaves.get('default', 'web', blocking(first.leaf.index)));
    await s.manager.updateConfiguration({ provider: 'consul', config: { PrivateKeyBits: 384, CSRMaxPerSecond: 0 }, state: null, forceWithoutCrossSigning: false });
    await settle(); // the roots watch fires and the roots cache tells the manager
    const newKey = s.roots.get().snapshot.activeSigningKeyId;
    expect(newKey).not.toBe(first.leaf.signingKeyId);
    s.clock.advance(14_999);
    await settle();
    expect(parked.answer).toBeUndefined();
    s.clock.advance(1);
    await settle();
    expect(parked.answer?.hit).toBe(false);
    expect(parked.answer!.leaf.signingKeyId).toBe(newKey);
    expect(parked.answer!.leaf.certPem.match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
  });

  it('re-issues at once after a root change with a zero spread, and on the next non-blocking read', async () => {
    const s = await setup({ spreadMs: 0 });
    const a = await s.leaves.get('default', 'a', now);
    const b = await s.leaves.get('default', 'b', now);
    const parked = watch(s.leaves.get('default', 'a', blocking(a.leaf.index)));
    await s.manager.updateConfiguration({ provider: 'consul', config: { PrivateKeyBits: 384, CSRMaxPerSecond: 0 }, state: null, forceWithoutCrossSigning: false });
    await settle();
    s.clock.advance(0);
    await settle();
    expect(parked.answer?.leaf.signingKeyId).not.toBe(a.leaf.signingKeyId);
    const nextB = await s.leaves.get('default', 'b', now);
    expect(nextB.hit).toBe(false);
    expect(nextB.leaf.signingKeyId).not.toBe(b.leaf.signingKeyId);
  });

  it('forgets a parked read whose client went away', async () => {
    const s = await setup();
    const first = await s.leaves.get('default', 'web', now);
    let abort: (() => void) | undefined;
    const parked = watch(s.leaves.get('default', 'web', blocking(first.leaf.index, 10_000, (fn) => (abort = fn))));
    const timers = s.clock.pendingTimers;
    abort!();
    expect(s.clock.pendingTimers).toBeLessThan(timers);
    s.clock.advance(first.leaf.renewAt);
    await settle();
    expect(parked.answer).toBeUndefined();
    expect(s.signer.signed).toBe(1); // nobody watching: no background renewal
  });

  it('keeps at most maxEntries leaves', async () => {
    const s = await setup({ maxEntries: 3 });
    for (const name of ['a', 'b', 'c', 'd']) await s.leaves.get('default', name, now);
    expect(s.leaves.size).toBe(3);
    await s.leaves.get('default', 'a', now); // evicted: issued again
    expect(s.signer.signed).toBe(5);
  });

  it('passes a rate-limit failure of a first issuance to the caller', async () => {
    const s = await setup();
    await s.manager.updateConfiguration({ provider: 'consul', config: { CSRMaxPerSecond: 0.5 }, state: null, forceWithoutCrossSigning: false });
    await s.leaves.get('default', 'a', now);
    await expect(s.leaves.get('default', 'b', now)).rejects.toMatchObject({ code: 'CSR_RATE_LIMITED' });
    // The failure is not cached: the next try after the interval succeeds.
    s.clock.advance(2000);
    expect((await s.leaves.get('default', 'b', now)).hit).toBe(false);
  });

  it('answers parked reads when closed', async () => {
    const s = await setup();
    const first = await s.leaves.get('default', 'web', now);
    const parked = watch(s.leaves.get('default', 'web', blocking(first.leaf.index)));
    s.leaves.close();
    await settle();
    expect(parked.answer).toEqual({ leaf: first.leaf, hit: true });
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
    const answers = Promise.all(services.map((service) => leaves.get('default', service, now)));
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
    const failing = Array.from({ length: MAX_ISSUING }, (_, i) => [leaves.get('default', `svc-${i}`, now), leaves.get('default', `svc-${i}`, now)]);
    for (const [one, two] of failing) {
      await expect(one).rejects.toThrow(/no signer for svc-/);
      await expect(two).rejects.toThrow(/no signer for svc-/);
    }
    expect((await leaves.get('default', 'svc-0', now)).hit).toBe(false);
    expect((await leaves.get('default', 'svc-0', now)).hit).toBe(true);
  });
});

