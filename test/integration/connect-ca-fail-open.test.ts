// Fail-open roots, proven by breaking the backend: an in-process agent (createAgent) whose CA
// reads go through a store wrapper that starts throwing. The agent's cached roots keep being
// served over HTTP (HIT, Age growing from the first failed refresh); the servers' endpoint, which
// reads the store, fails; once the backend answers again the cache catches up. A blocking read of
// the servers' endpoint parked when the backend starts failing is answered with the error (by the
// wake-up or by its wait running out), the agent stays up, and the endpoint recovers with it.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, type Agent } from '../../src/agent/index.js';
import { loadConfig } from '../../src/config/load.js';
import { ROOTS_TABLE } from '../../src/connect/ca/model.js';
import { FakeClock } from '../../src/core/clock.js';
import { FailingStore } from '../unit/connect/ca/support.js';
import { recordingLogger } from '../support/recording-logger.js';

describe('fail-open CA roots', () => {
  let agent: Agent;
  let failing: FailingStore | undefined;
  let url = '';
  const clock = new FakeClock(Date.now());
  const log = recordingLogger();

  beforeAll(async () => {
    const config = loadConfig({ files: [], flags: { ports: { http: 0 }, client_addr: '127.0.0.1' }, dev: true });
    agent = await createAgent(config, { clock, log, wrapCaStore: (store) => (failing = new FailingStore(store)) });
    url = `http://127.0.0.1:${await agent.listen()}`;
  });
  afterAll(() => agent.close());
  afterEach(() => {
    if (failing !== undefined) failing.failing = false; // a failed case leaves the backend up for the next
  });

  it('serves the cached roots while the state backend fails', async () => {
    const first = await fetch(`${url}/v1/agent/connect/ca/roots`);
    expect(first.headers.get('x-cache')).toBe('MISS');
    const body = await first.text();

    failing!.failing = true;
    // A roots change reaches the cache's watch; its refresh cannot read the store.
    const row = agent.store.list(ROOTS_TABLE, '')[0]!;
    await agent.store.commit([
      { op: 'set', table: ROOTS_TABLE, key: 'ff', value: { ...(row.value as object), ID: 'ff', Active: false } },
    ]);
    await new Promise((resolve) => setImmediate(resolve));
    clock.advance(7000);

    const cached = await fetch(`${url}/v1/agent/connect/ca/roots`);
    expect(cached.status).toBe(200);
    expect(cached.headers.get('x-cache')).toBe('HIT');
    expect(cached.headers.get('age')).toBe('7');
    expect(await cached.text()).toBe(body);

    const server = await fetch(`${url}/v1/connect/ca/roots`);
    expect(server.status).toBe(500);
    expect(await server.text()).toBe('backend unavailable');

    failing!.failing = false;
    clock.advance(120_000); // past the refresh retry (backoff with jitter)
    await new Promise((resolve) => setImmediate(resolve));
    const recovered = await fetch(`${url}/v1/agent/connect/ca/roots`);
    expect(recovered.headers.get('age')).toBe('0');
    expect(((await recovered.json()) as { Roots: unknown[] }).Roots).toHaveLength(2);
  });

  const parkedQueries = async (): Promise<number> => {
    const self = (await (await fetch(`${url}/v1/agent/self`)).json()) as { Stats: { agent: Record<string, string> } };
    return Number(self.Stats.agent.parked_queries);
  };
  async function untilParked(count: number): Promise<void> {
    const deadline = Date.now() + 10_000;
    while ((await parkedQueries()) !== count) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${count} parked queries`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  const serverRootsIndex = async (): Promise<number> => {
    const res = await fetch(`${url}/v1/connect/ca/roots`);
    expect(res.status).toBe(200);
    return Number(res.headers.get('x-svc-index'));
  };
  /** Re-writes an inactive root: a change of the roots table, which wakes its watchers. */
  const touchRoots = (): Promise<unknown> => {
    const row = agent.store.list(ROOTS_TABLE, '')[0]!;
    return agent.store.commit([
      { op: 'set', table: ROOTS_TABLE, key: 'fe', value: { ...(row.value as object), ID: 'fe', Active: false } },
    ]);
  };
  const serverErrors = (): number =>
    log.entries.filter((e) => e.level === 'error' && e.obj['path'] === '/v1/connect/ca/roots').length;

  it("a parked servers' roots query woken while the backend fails gets the error; the agent stays up and recovers", async () => {
    const index = await serverRootsIndex();
    const errorsBefore = serverErrors();
    const parked = Promise.all([
      fetch(`${url}/v1/connect/ca/roots?index=${index}&wait=60s`),
      fetch(`${url}/v1/connect/ca/roots?index=${index}&wait=60s&pem=true`),
    ]);
    await untilParked(2);

    failing!.failing = true;
    await touchRoots(); // wakes both groups; their reads now throw
    const replies = await parked;
    for (const res of replies) {
      expect(res.status).toBe(500);
      expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
      expect(await res.text()).toBe('backend unavailable');
    }
    expect(await parkedQueries()).toBe(0);
    // Logged as a non-parked 500 is: once for its cause while that cause repeats (src/core/log-gate.ts),
    // so the two groups' failures add one line at most (none when the test before logged it).
    expect(serverErrors() - errorsBefore).toBeLessThanOrEqual(1);

    failing!.failing = false;
    const recovered = await fetch(`${url}/v1/connect/ca/roots`);
    expect(recovered.status).toBe(200);
    const recoveredIndex = Number(recovered.headers.get('x-svc-index'));
    expect(recoveredIndex).toBeGreaterThan(index);
    // Blocking works again too.
    const again = fetch(`${url}/v1/connect/ca/roots?index=${recoveredIndex}&wait=60s`);
    await untilParked(1);
    await touchRoots();
    const woken = await again;
    expect(woken.status).toBe(200);
    expect(Number(woken.headers.get('x-svc-index'))).toBeGreaterThan(recoveredIndex);
    expect(await parkedQueries()).toBe(0);
  });

  it("a parked servers' roots query whose wait runs out while the backend fails gets the error", async () => {
    const index = await serverRootsIndex();
    const parked = fetch(`${url}/v1/connect/ca/roots?index=${index}&wait=2s`);
    await untilParked(1);

    failing!.failing = true;
    clock.advance(3_000); // past the wait and its jitter (at most wait/16)
    const res = await parked;
    expect(res.status).toBe(500);
    expect(await res.text()).toBe('backend unavailable');
    expect(await parkedQueries()).toBe(0);

    failing!.failing = false;
    const recovered = await fetch(`${url}/v1/connect/ca/roots`);
    expect(recovered.status).toBe(200);
    expect(Number(recovered.headers.get('x-svc-index'))).toBe(index);
    const timedOut = fetch(`${url}/v1/connect/ca/roots?index=${index}&wait=2s`);
    await untilParked(1);
    clock.advance(3_000);
    expect((await timedOut).status).toBe(200);
  });
});
