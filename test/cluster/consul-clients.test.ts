// Client libraries' calls on a cluster (servers a and b, client c, on a 3-member etcd), as a user
// writes them. The npm `consul` client: a transaction sent through any agent is read back through
// every other, one that fails applies nothing anywhere; a session and lock taken through the client
// agent hold on every agent; an event fired through the client agent reaches each agent's blocking
// event list, followed with the library's own watch. Debian's python3-consul
// (test/integration/support/python-consul-events.py) fires one and follows it on every agent.
// python3-consul's session and lock calls on the cluster are in sessions.test.ts.
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../integration/support/agent-process.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startClusterAgents, type ClusterAgents } from './support.js';

interface KvResult {
  KV: { Key: string; Value: string | null; ModifyIndex: number };
}
interface TxnReply {
  Results: KvResult[] | null;
  Errors: { OpIndex: number; What: string }[] | null;
}
type Create = (ops: unknown[], options: object) => Promise<TxnReply>;
interface ListedEvent {
  ID: string;
  Name: string;
  Payload: string | null;
}

const b64 = (text: string): string => Buffer.from(text).toString('base64');
const run = promisify(execFile);
const ENSURE = resolve(import.meta.dirname, '../../scripts/ensure-python-consul.sh');
const PYTHON_EVENTS = resolve(import.meta.dirname, '../integration/support/python-consul-events.py');

function client(agent: AgentProcess): Consul {
  return new Consul({ host: '127.0.0.1', port: agent.port });
}

/** The library's transaction.create: its typings name flat ops, it sends Consul's api.TxnOp as given. */
function txn(agent: AgentProcess): Create {
  const consul = client(agent);
  return consul.transaction.create.bind(consul.transaction) as unknown as Create;
}

/** Resolves with the event once the library's watch over the agent's event list shows it. */
function seenBy(agent: AgentProcess, name: string, id: string): Promise<ListedEvent> {
  const consul = client(agent);
  const watch = consul.watch({ method: consul.event.list, options: { name } as never, backoffMax: 1000 });
  return new Promise((resolve, reject) => {
    watch.on('change', (events: ListedEvent[]) => {
      const event = events.find((e) => e.ID === id);
      if (event === undefined) return;
      watch.end();
      resolve(event);
    });
    watch.on('error', (err: Error) => {
      watch.end();
      reject(err);
    });
  });
}

describe('Consul client libraries on a cluster', () => {
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 3 });
    // The library reads X-Consul-Index.
    cluster = await startClusterAgents(etcd, { prefix: `/svc-clients-${process.pid}/`, headerBrand: 'Consul' });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    await etcd?.stop();
  });

  it('a transaction through each agent is read back through the others', async () => {
    for (const [i, agent] of cluster.agents.entries()) {
      const reply = await txn(agent)(
        [
          { KV: { Verb: 'set', Key: `npm/${i}/a`, Value: b64(`a from ${i}`) } },
          { KV: { Verb: 'set', Key: `npm/${i}/b`, Value: b64(`b from ${i}`) } },
        ],
        {},
      );
      expect(reply.Errors).toBeNull();
      const index = reply.Results![0]!.KV.ModifyIndex;
      for (const other of cluster.agents) {
        const read = await txn(other)([{ KV: { Verb: 'get-tree', Key: `npm/${i}/` } }], {});
        expect(read.Results!.map((r) => [r.KV.Key, r.KV.Value, r.KV.ModifyIndex])).toEqual([
          [`npm/${i}/a`, b64(`a from ${i}`), index],
          [`npm/${i}/b`, b64(`b from ${i}`), index],
        ]);
      }
    }
  });

  it('a failed transaction through the client agent applies nothing on any agent', async () => {
    const c = cluster.agents[2]!;
    const failed = await txn(c)(
      [
        { KV: { Verb: 'set', Key: 'npm/never', Value: b64('never') } },
        { KV: { Verb: 'check-not-exists', Key: 'npm/0/a' } },
      ],
      {},
    ).then(
      () => 'applied',
      (err: Error & { response?: { statusCode?: number; body?: TxnReply } }) => err.response,
    );
    expect(failed).toMatchObject({
      statusCode: 409,
      body: { Results: null, Errors: [{ OpIndex: 1, What: 'key "npm/0/a" exists' }] },
    });
    for (const agent of cluster.agents) expect(await client(agent).kv.get('npm/never')).toBeUndefined();
  });

  it('an event fired through the client agent reaches every agent, payload and all', async () => {
    const c = cluster.agents[2]!;
    const fired = await client(c).event.fire({ name: 'deploy', payload: 'v2.1' });
    expect(fired).toMatchObject({ Name: 'deploy', Payload: 'v2.1' });
    const seen = await Promise.all(cluster.agents.map((agent) => seenBy(agent, 'deploy', fired.ID)));
    // Through its watch the library hands on the list as the agent sent it: the payload base64, as Consul's.
    for (const event of seen) expect(event).toMatchObject({ ID: fired.ID, Name: 'deploy', Payload: b64('v2.1') });
  });

  it('npm consul: a session and lock taken through the client agent hold on every agent', async () => {
    const [a, b, c] = cluster.agents as [AgentProcess, AgentProcess, AgentProcess];
    const mine = (await client(c).session.create({ name: 'npm-leader', lockdelay: '0s' })).ID;
    const theirs = (await client(b).session.create({ name: 'npm-other', lockdelay: '0s' })).ID;
    expect(await client(c).kv.set({ key: 'npm/leader', value: 'c', acquire: mine })).toBe(true);
    for (const agent of cluster.agents) {
      expect(await client(agent).kv.get('npm/leader')).toMatchObject({ Session: mine, LockIndex: 1, Value: 'c' });
      expect(await client(agent).session.info(mine)).toMatchObject({ ID: mine, Name: 'npm-leader' });
    }
    // The library hands Consul's `false` body on as undefined; the entry read back is the proof.
    expect(await client(a).kv.set({ key: 'npm/leader', value: 'b', acquire: theirs })).toBeFalsy();
    expect(await client(b).kv.get('npm/leader')).toMatchObject({ Session: mine, LockIndex: 1, Value: 'c' });
    expect(await client(a).kv.set({ key: 'npm/leader', value: 'c', release: mine })).toBe(true);
    expect(await client(b).kv.set({ key: 'npm/leader', value: 'b', acquire: theirs })).toBe(true);
    expect(await client(c).kv.get('npm/leader')).toMatchObject({ Session: theirs, LockIndex: 2, Value: 'b' });
    await client(c).session.destroy(mine);
    await client(a).session.destroy(theirs);
    const listed = await client(b).session.list();
    expect(listed.map((session: { ID: string }) => session.ID)).not.toContain(mine);
  });

  it(
    "python3-consul: an event fired through the client agent reaches every agent's blocking list",
    { timeout: 300_000 },
    async () => {
      const python = (await run(ENSURE, [])).stdout.trim();
      const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(CONSUL|SVC)_/.test(name)));
      const ports = cluster.agents.map((agent) => String(agent.port));
      const { stdout } = await run(python, [PYTHON_EVENTS, ports[2]!, ...ports], { env });
      const seen = stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { port: number; id: string; fired: string; payload: string; node: string });
      expect(seen.map((e) => e.port)).toEqual(cluster.agents.map((agent) => agent.port));
      for (const event of seen) expect(event).toMatchObject({ id: event.fired, payload: 'build 42', node: '.*' });
    },
  );
});
