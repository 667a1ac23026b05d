// The CSR rate limit with a fake clock: a token bucket of burst 1, or a semaphore, each with the
// 500 ms wait, and limits read on every call.
import { describe, expect, it } from 'vitest';
import { CsrLimiter, type CsrLimits } from '../../../../src/connect/ca/csr-limiter.js';
import { FakeClock } from '../../../../src/core/clock.js';

const outcome = (p: Promise<unknown>): { state: string } => {
  const o = { state: 'pending' };
  p.then(
    () => (o.state = 'ok'),
    (e: { code?: string }) => (o.state = e.code ?? 'error'),
  );
  return o;
};
const tick = () => new Promise((r) => setImmediate(r));

describe('CsrLimiter', () => {
  it('spaces signings by 1/rate and rejects what would wait over 500 ms', async () => {
    const clock = new FakeClock(0);
    const limiter = new CsrLimiter(() => ({ csrMaxPerSecond: 4, csrMaxConcurrent: 0 }), clock);
    const results = [1, 2, 3, 4].map(() => outcome(limiter.acquire()));
    await tick();
    expect(results.map((r) => r.state)).toEqual(['ok', 'pending', 'pending', 'CSR_RATE_LIMITED']);
    clock.advance(250);
    await tick();
    expect(results.map((r) => r.state)).toEqual(['ok', 'ok', 'pending', 'CSR_RATE_LIMITED']);
    clock.advance(250);
    await tick();
    expect(results[2]!.state).toBe('ok');
    clock.advance(10_000); // idle time does not bank more than one token
    const burst = [1, 2].map(() => outcome(limiter.acquire()));
    await tick();
    expect(burst.map((r) => r.state)).toEqual(['ok', 'pending']);
  });

  it('limits concurrency when the rate is 0, handing slots over in order', async () => {
    const clock = new FakeClock(0);
    const limiter = new CsrLimiter(() => ({ csrMaxPerSecond: 0, csrMaxConcurrent: 1 }), clock);
    const first = await limiter.acquire();
    const second = outcome(limiter.acquire());
    const third = outcome(limiter.acquire());
    clock.advance(100);
    first();
    first(); // releasing twice frees one slot only
    await tick();
    expect([second.state, third.state]).toEqual(['ok', 'pending']);
    clock.advance(400);
    await tick();
    expect(third.state).toBe('CSR_RATE_LIMITED');
  });

  it('is unlimited with both limits 0 and follows changed limits', async () => {
    const clock = new FakeClock(0);
    let limits: CsrLimits = { csrMaxPerSecond: 0, csrMaxConcurrent: 0 };
    const limiter = new CsrLimiter(() => limits, clock);
    const many = Array.from({ length: 100 }, () => outcome(limiter.acquire()));
    await tick();
    expect(many.every((r) => r.state === 'ok')).toBe(true);
    limits = { csrMaxPerSecond: 1, csrMaxConcurrent: 0 };
    const two = [1, 2].map(() => outcome(limiter.acquire()));
    await tick();
    expect(two.map((r) => r.state)).toEqual(['ok', 'CSR_RATE_LIMITED']);
  });
});
