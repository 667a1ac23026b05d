// A restore too large for one etcd transaction on a cluster (servers a and b, client c, on etcd;
// docs/decisions.md#snapshots), read by a poller through another agent, with fetch (neither npm
// `consul` nor python3-consul has a snapshot call): every KV listing (read through from etcd) and
// every intentions listing (from the agent's view) during the restore is wholly the old state or
// wholly the restored one: each read that is neither counts, and the count must be 0. A restorer
// killed (SIGKILL) part way leaves every agent's readers on the old state and writes refused with
// `snapshot restore in progress`; the same restore run again through the other server completes it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../integration/support/agent-process.js';
import { silentLogger } from '../../src/core/log.js';
import { connectEtcd } from '../../src/state/etcd/index.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startClusterAgents, type ClusterAgents } from './support.js';

/** Enough rows for about 100 transactions of 128 operations: the restore takes many steps. */
const KEYS = 12_000;
const INTENTIONS = 10;
/** Consul's most operations in one /v1/txn. */
const TXN_OPS = 64;

function call(agent: AgentProcess, method: string, path: string, body?: string | Buffer): Promise<Response> {
  return fetch(`${agent.url}${path}`, { method, ...(body === undefined ? {} : { body }) });
}

/** Every KV key under big/ set to `value` (and big/extra, which only the old state has, when `extra`). */
async function fillKv(agent: AgentProcess, value: string, extra: boolean): Promise<void> {
  const ops = Array.from({ length: KEYS }, (_, i) => ({
    KV: { Verb: 'set', Key: `big/${String(i).padStart(5, '0')}`, Value: Buffer.from(value).toString('base64') },
  }));
  if (extra) ops.push({ KV: { Verb: 'set', Key: 'big/extra', Value: Buffer.from(value).toString('base64') } });
  for (let i = 0; i < ops.length; i += TXN_OPS) {
    const res = await call(agent, 'PUT', '/v1/txn', JSON.stringify(ops.slice(i, i + TXN_OPS)));
    expect(res.status, await res.clone().text()).toBe(200);
  }
}

async function setIntentions(agent: AgentProcess, action: 'allow' | 'deny'): Promise<void> {
  for (let i = 0; i < INTENTIONS; i++) {
    const res = await call(
      agent,
      'PUT',
      `/v1/connect/intentions/exact?source=web${i}&destination=db`,
      JSON.stringify({ Action: action }),
    );
    expect(res.status, await res.clone().text()).toBe(200);
  }
}

type State = 'old' | 'new' | 'mix';

/** The old state: every key `old` and big/extra; the restored one: every key `new`, no big/extra. */
async function kvState(agent: AgentProcess): Promise<State> {
  const res = await call(agent, 'GET', '/v1/kv/big/?recurse');
  if (res.status !== 200) return 'mix';
  const values = ((await res.json()) as { Value: string }[]).map((e) => Buffer.from(e.Value, 'base64').toString());
  if (values.length === KEYS + 1 && values.every((v) => v === 'old')) return 'old';
  if (values.length === KEYS && values.every((v) => v === 'new')) return 'new';
  return 'mix';
}

/** The old state denies every web→db pair, the restored one allows them. */
async function intentionsState(agent: AgentProcess): Promise<State> {
  const res = await call(agent, 'GET', '/v1/connect/intentions');
  if (res.status !== 200) return 'mix';
  const list = ((await res.json()) as { SourceName: string; Action: string }[]).filter((i) =>
    i.SourceName.startsWith('web'),
  );
  if (list.length !== INTENTIONS) return 'mix';
  if (list.every((i) => i.Action === 'deny')) return 'old';
  if (list.every((i) => i.Action === 'allow')) return 'new';
  return 'mix';
}

interface Seen {
  reads: number;
  mixes: number;
  readonly states: Set<State>;
}

/** Reads through `agent` until `done` settles, counting every read that is neither state. */
async function pollWhile(agent: AgentProcess, done: Promise<unknown>): Promise<Seen> {
  let finished = false;
  void done.finally(() => (finished = true)).catch(() => undefined);
  const seen: Seen = { reads: 0, mixes: 0, states: new Set() };
  while (!finished) {
    for (const state of [await kvState(agent), await intentionsState(agent)]) {
      seen.reads++;
      seen.states.add(state);
      if (state === 'mix') seen.mixes++;
    }
  }
  return seen;
}

describe('a restore in steps on a cluster', () => {
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;
  const prefix = `/svc-snapshot-fence-${process.pid}/`;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 1 });
    cluster = await startClusterAgents(etcd, { prefix, headerBrand: 'Consul' });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    await etcd?.stop();
  });

  it('shows no reader a mix; a restorer killed part way leaves readers on the old state until a re-run', async () => {
    const [a, b, c] = cluster.agents as [AgentProcess, AgentProcess, AgentProcess];
    await fillKv(a, 'new', false);
    await setIntentions(b, 'allow');
    const saved = await call(a, 'GET', '/v1/snapshot');
    expect(saved.status).toBe(200);
    const archive = Buffer.from(await saved.arrayBuffer());

    const toOld = async (): Promise<void> => {
      await fillKv(c, 'old', true);
      await setIntentions(c, 'deny');
      expect([await kvState(c), await intentionsState(c)]).toEqual(['old', 'old']);
    };

    // A whole restore through server a, read through client c meanwhile.
    await toOld();
    const restored = call(a, 'PUT', '/v1/snapshot', archive);
    const seen = await pollWhile(c, restored);
    expect((await restored).status).toBe(200);
    expect(seen.mixes, JSON.stringify([...seen.states])).toBe(0);
    expect(seen.reads).toBeGreaterThan(2);
    expect([await kvState(c), await intentionsState(c)]).toEqual(['new', 'new']);

    // The same, with server a killed once the fence is up and some steps are in.
    await toOld();
    const raw = connectEtcd({ endpoints: etcd.endpoints, log: silentLogger });
    try {
      const fence = Buffer.from(`${prefix}meta/restore`);
      // Every KV step writes the KV table's marker.
      const marker = Buffer.from(`${prefix}bulk/kv`);
      let settled = false;
      const killed = call(a, 'PUT', '/v1/snapshot', archive).then(
        (res) => ((settled = true), res.status),
        (err: unknown) => err,
      );
      // Up, with at least five steps in after it.
      for (;;) {
        expect(settled, 'the restore ended before it could be killed').toBe(false);
        const up = await raw.getKey(fence, 5_000);
        const last = await raw.getKey(marker, 5_000);
        if (up !== undefined && last !== undefined && last.modRevision >= up.createRevision + 5) break;
      }
      await a.stop('SIGKILL');
      await killed;
      expect(await raw.getKey(fence, 5_000)).toBeDefined();
    } finally {
      raw.close();
    }
    for (const agent of [b, c]) {
      expect(await kvState(agent)).toBe('old');
      expect(await intentionsState(agent)).toBe('old');
    }
    const write = await call(c, 'PUT', '/v1/kv/during', 'x');
    expect(write.status).toBe(503);
    expect(await write.text()).toMatch(/^snapshot restore in progress: /);

    // Run again through server b, read through c meanwhile: it completes.
    const rerun = call(b, 'PUT', '/v1/snapshot', archive);
    const again = await pollWhile(c, rerun);
    expect((await rerun).status, await (await rerun).clone().text()).toBe(200);
    expect(again.mixes, JSON.stringify([...again.states])).toBe(0);
    expect([await kvState(c), await intentionsState(c)]).toEqual(['new', 'new']);
    expect((await call(c, 'PUT', '/v1/kv/after', 'x')).status).toBe(200);
    // Three fills of 12,000 keys through /v1/txn and three restores of about 100 steps on 2 shared cores.
  }, 300_000);
});
