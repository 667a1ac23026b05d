// Large KV listings on a 3-member etcd with the documented RBAC (docs/cluster-security.md): 20 MB of
// values under one prefix (each under the 512 KiB value cap; 27 MB of JSON listed) is listed whole
// by every agent, both servers and the client agent, with `?recurse` and `?keys`; a prefix past
// the answer limit (KV_LISTING_MAX_BYTES) is answered 413 naming it, and `?keys` still lists it.
// Every call is made once and counted: none is tried again until it works.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KV_LISTING_MAX_BYTES } from '../../src/kv/entries.js';
import { callAgent, startRbacCluster, type Answer, type InProcessAgent, type RbacCluster } from './support.js';

const PREFIX = '/svc/';
const MANAGEMENT = '5d4c3b2a-1f0e-4d9c-8b7a-6e5d4c3b2a10';
/** Under the 512 KiB value cap (limits.kv_max_value_size); 667 KB stored as base64. */
const VALUE_BYTES = 500_000;
/** 40 values: 20 MB, listed as 27 MB of JSON. */
const SERVED = 40;
/** 20 more: 30 MB of values, 40 MB stored, past the 32 MiB limit. */
const MORE = 20;

let rbac: RbacCluster;
let agents: InProcessAgent[] = [];
const names = ['server-1', 'server-2', 'client-1'];
const written = new Map<string, Buffer>();

const call = (at: InProcessAgent, method: string, path: string, body?: unknown): Promise<Answer> =>
  callAgent(at, method, path, body, MANAGEMENT);

/** PUTs `count` fresh values under big/ through `at`, from `from` on; each call once. */
async function writeValues(at: InProcessAgent, from: number, count: number): Promise<string[]> {
  const failed: string[] = [];
  for (let i = from; i < from + count; i++) {
    const key = `big/${String(i).padStart(3, '0')}`;
    const value = randomBytes(VALUE_BYTES);
    const res = await fetch(`${at.url}/v1/kv/${key}`, {
      method: 'PUT',
      headers: { 'X-Svc-Token': MANAGEMENT },
      body: value,
    });
    const text = await res.text();
    if (res.status === 200 && text.trim() === 'true') written.set(key, value);
    else failed.push(`${key}: ${res.status} ${text.slice(0, 200)}`);
  }
  return failed;
}

beforeAll(async () => {
  rbac = await startRbacCluster(PREFIX, ['client-1']);
  const first = await rbac.start('server-1', true, { initialManagement: MANAGEMENT });
  agents = [first, ...(await Promise.all([rbac.start('server-2', true), rbac.start('client-1', false)]))];
}, 180_000);
afterAll(() => rbac?.stop());

describe('KV listings of many large values, on every agent', () => {
  it('20 MB under one prefix: ?recurse lists every key with its value intact, ?keys every key', async () => {
    expect(await writeValues(agents[0] as InProcessAgent, 0, SERVED)).toEqual([]);
    const keys = [...written.keys()].sort();
    for (const [i, agent] of agents.entries()) {
      const listed = await call(agent, 'GET', '/v1/kv/big/?recurse');
      expect(listed.status, `${names[i]}: ${String(listed.body).slice(0, 300)}`).toBe(200);
      const entries = listed.body as { Key: string; Value: string }[];
      expect(entries.map((e) => e.Key)).toEqual(keys);
      const intact = entries.filter((e) => Buffer.from(e.Value, 'base64').equals(written.get(e.Key) as Buffer));
      expect(intact.length, names[i]).toBe(SERVED);
      const named = await call(agent, 'GET', '/v1/kv/big/?keys');
      expect(named, names[i]).toEqual({ status: 200, body: keys });
    }
  }, 120_000);

  it('past the answer limit: ?recurse is answered 413 naming the limit, ?keys still lists every key', async () => {
    expect(await writeValues(agents[2] as InProcessAgent, SERVED, MORE)).toEqual([]);
    const keys = [...written.keys()].sort();
    expect(keys.length).toBe(SERVED + MORE);
    for (const [i, agent] of agents.entries()) {
      const listed = await call(agent, 'GET', '/v1/kv/big/?recurse');
      expect(listed.status, names[i]).toBe(413);
      expect(String(listed.body), names[i]).toContain(`the listing holds more than ${KV_LISTING_MAX_BYTES} bytes`);
      const named = await call(agent, 'GET', '/v1/kv/big/?keys');
      expect(named, names[i]).toEqual({ status: 200, body: keys });
    }
  }, 120_000);
});
