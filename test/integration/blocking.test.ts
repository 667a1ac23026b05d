// Blocking queries on the real agent (docs/decisions.md#blocking-queries, D6): wake on a change of
// what the query watches, time out with current data, unpark on disconnect, fan out to thousands.
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { get, openRequest } from './support/raw-http.js';

let agent: AgentProcess;
const kv = (path: string): string => `${agent.url}/v1/kv/${path}`;
const put = (path: string, body = 'v'): Promise<Response> => fetch(kv(path), { method: 'PUT', body });
const indexOf = async (path: string): Promise<number> => Number((await fetch(kv(path))).headers.get('x-svc-index'));

async function agentStats(): Promise<{ parked: number; watches: number }> {
  const self = (await (await fetch(`${agent.url}/v1/agent/self`)).json()) as {
    Stats: { agent: Record<string, string> };
  };
  return { parked: Number(self.Stats.agent.parked_queries), watches: Number(self.Stats.agent.watches) };
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Sends a blocking read and hands back its response once the agent counts it parked. */
async function parkedFetch(url: string): Promise<{ response: Promise<Response> }> {
  const before = (await agentStats()).parked;
  const response = fetch(url);
  await until(async () => (await agentStats()).parked === before + 1, `${url} to park`);
  return { response };
}

beforeAll(async () => {
  agent = await startAgent();
});
afterAll(() => agent.stop());

describe('blocking queries', () => {
  it('returns at once without index, or with an index already passed', async () => {
    await put('blk/now');
    const index = await indexOf('blk/now');
    const res = await fetch(kv(`blk/now?index=${index - 1}&wait=30s`));
    expect(res.status).toBe(200);
    expect(Number(res.headers.get('x-svc-index'))).toBe(index);
  });

  it('parks until the watched key changes, then answers with the new data', async () => {
    await put('blk/key', 'old');
    const index = await indexOf('blk/key');
    const { response: parked } = await parkedFetch(kv(`blk/key?index=${index}&wait=30s`));
    await put('blk/key', 'new');
    const res = await parked;
    expect(Number(res.headers.get('x-svc-index'))).toBeGreaterThan(index);
    const [entry] = (await res.json()) as { Value: string }[];
    expect(Buffer.from(entry!.Value, 'base64').toString()).toBe('new');
  });

  it('does not wake for a write to another key (D6)', async () => {
    await put('blk/quiet', 'x');
    const index = await indexOf('blk/quiet');
    const { response: parked } = await parkedFetch(kv(`blk/quiet?index=${index}&wait=30s`));
    const { parked: before } = await agentStats();
    await put('blk/other', 'y');
    await put('blk/quieter', 'y');
    expect((await agentStats()).parked).toBe(before);
    await put('blk/quiet', 'z');
    // Not woken by the other writes: the answer holds the watched key's later write.
    const res = await parked;
    expect(res.status).toBe(200);
    const [entry] = (await res.json()) as { Value: string }[];
    expect(Buffer.from(entry!.Value, 'base64').toString()).toBe('z');
  });

  it('wakes a prefix query on a write and on a delete under the prefix, not outside it', async () => {
    await put('pfx/a', '1');
    let index = Number((await fetch(kv('pfx/?recurse'))).headers.get('x-svc-index'));
    let { response: parked } = await parkedFetch(kv(`pfx/?recurse&index=${index}&wait=30s`));
    await put('pfxother', 'no');
    await put('pfx/b', '2');
    // Not woken by the write outside the prefix: the answer holds the write under it.
    let res = await parked;
    index = Number(res.headers.get('x-svc-index'));
    expect(((await res.json()) as unknown[]).length).toBe(2);
    ({ response: parked } = await parkedFetch(kv(`pfx/?keys&index=${index}&wait=30s`)));
    await fetch(kv('pfx/a'), { method: 'DELETE' });
    res = await parked;
    expect(Number(res.headers.get('x-svc-index'))).toBeGreaterThan(index);
    expect(await res.json()).toEqual(['pfx/b']);
  });

  it('wakes a query on a key that does not exist yet when it is created', async () => {
    const res404 = await fetch(kv('blk/later'));
    expect(res404.status).toBe(404);
    const index = Number(res404.headers.get('x-svc-index'));
    expect(index).toBeGreaterThanOrEqual(1);
    const { response: parked } = await parkedFetch(kv(`blk/later?index=${index}&wait=30s`));
    await put('blk/later', 'here');
    expect((await parked).status).toBe(200);
  });

  it('times out with the current data and the same index', async () => {
    await put('blk/timeout', 'same');
    const index = await indexOf('blk/timeout');
    const res = await fetch(kv(`blk/timeout?index=${index}&wait=300ms`));
    expect(res.status).toBe(200);
    expect(Number(res.headers.get('x-svc-index'))).toBe(index);
  });

  it("rejects a bad index or wait with Consul's texts", async () => {
    for (const [query, text] of [
      ['index=abc', 'Invalid index'],
      ['index=-1', 'Invalid index'],
      ['index=18446744073709551616', 'Invalid index'],
      ['wait=10', 'Invalid wait time'],
      ['wait=5x', 'Invalid wait time'],
      ['wait=bad&index=bad', 'Invalid wait time'],
    ]) {
      const res = await fetch(kv(`blk/x?${query}`));
      expect(res.status, query).toBe(400);
      expect(await res.text(), query).toBe(text);
    }
  });

  it('unparks a client that disconnects, leaving no watch behind', async () => {
    await put('blk/gone', 'x');
    const index = await indexOf('blk/gone');
    const before = await agentStats();
    const { socket } = await openRequest(agent.port, get(`/v1/kv/blk/gone?index=${index}&wait=60s`));
    await until(async () => (await agentStats()).parked === before.parked + 1, 'the query to park');
    socket.destroy();
    await until(async () => {
      const now = await agentStats();
      return now.parked === before.parked && now.watches === before.watches;
    }, 'the query to unpark');
  });

  it('wakes 10,000 parked queries with one write', async () => {
    await put('blk/fan', 'start');
    const index = await indexOf('blk/fan');
    const sockets: Socket[] = [];
    const responses: Promise<{ status: number; headers: Record<string, string> }>[] = [];
    try {
      for (let batch = 0; batch < 20; batch++) {
        const opened = await Promise.all(
          Array.from({ length: 500 }, () => openRequest(agent.port, get(`/v1/kv/blk/fan?index=${index}&wait=120s`))),
        );
        for (const { socket, response } of opened) {
          sockets.push(socket);
          responses.push(response);
        }
      }
      await until(async () => (await agentStats()).parked >= 10_000, '10,000 parked queries', 30_000);
      await put('blk/fan', 'go');
      const all = await Promise.all(responses);
      expect(all.every((r) => r.status === 200)).toBe(true);
      expect(all.every((r) => Number(r.headers['x-svc-index']) > index)).toBe(true);
      expect((await agentStats()).parked).toBe(0);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
  }, 60_000);
});
