// Fail-open roots, proven by breaking the backend: an in-process agent (createAgent) whose CA
// reads go through a store wrapper that starts throwing. The agent's cached roots keep being
// served over HTTP (HIT, Age growing from the first failed refresh); the servers' endpoint, which
// reads the store, fails; once the backend answers again the cache catches up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, type Agent } from '../../src/agent.js';
import { loadConfig } from '../../src/config/load.js';
import { ROOTS_TABLE } from '../../src/connect/ca/model.js';
import { FakeClock } from '../../src/core/clock.js';
import { FailingStore } from '../unit/connect/ca/support.js';

describe('fail-open CA roots', () => {
  let agent: Agent;
  let failing: FailingStore | undefined;
  let url = '';
  const clock = new FakeClock(Date.now());

  beforeAll(async () => {
    const config = loadConfig({ files: [], flags: { ports: { http: 0 }, client_addr: '127.0.0.1' }, dev: true });
    agent = await createAgent(config, { clock, wrapCaStore: (store) => (failing = new FailingStore(store)) });
    url = `http://127.0.0.1:${await agent.listen()}`;
  });
  afterAll(() => agent.close());

  it('serves the cached roots while the state backend fails', async () => {
    const first = await fetch(`${url}/v1/agent/connect/ca/roots`);
    expect(first.headers.get('x-cache')).toBe('MISS');
    const body = await first.text();

    failing!.failing = true;
    // A roots change reaches the cache's watch; its refresh cannot read the store.
    const row = agent.store.list(ROOTS_TABLE, '')[0]!;
    await agent.store.commit([{ op: 'set', table: ROOTS_TABLE, key: 'ff', value: { ...(row.value as object), ID: 'ff', Active: false } }]);
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
});
