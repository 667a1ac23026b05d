// Snapshots on a cluster (servers a and b, client c, on etcd; docs/decisions.md#snapshots), with
// fetch (neither npm `consul` nor python3-consul has a snapshot call): saved through a server, the
// archive holds the mesh tables, KV and the private range (the CA key) at one etcd revision; later
// changes are undone by restoring it through the client agent (forwarded to a server), after which
// every agent reads the restored state, a blocking read parked on the client agent wakes, and a TTL
// session lives on under a new etcd lease. A client agent refuses a save, and an archive over what
// one etcd request carries with a text that says to restore on a server.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentProcess } from '../integration/support/agent-process.js';
import { decodeArchive, type Archive } from '../../src/snapshot/archive.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startClusterAgents, until, type ClusterAgents } from './support.js';

function call(agent: AgentProcess, method: string, path: string, body?: string | Buffer): Promise<Response> {
  return fetch(`${agent.url}${path}`, { method, ...(body === undefined ? {} : { body }) });
}

async function kvKeys(agent: AgentProcess): Promise<string[]> {
  const res = await call(agent, 'GET', '/v1/kv/?keys');
  return res.status === 404 ? [] : ((await res.json()) as string[]);
}

async function intentionPairs(agent: AgentProcess): Promise<string[]> {
  const list = (await (await call(agent, 'GET', '/v1/connect/intentions')).json()) as {
    SourceName: string;
    DestinationName: string;
    Action: string;
  }[];
  return list.map((i) => `${i.SourceName}->${i.DestinationName}:${i.Action}`).sort();
}

/** The CA roots an agent serves, less their indexes (restored rows take new ones). */
async function rootsOf(agent: AgentProcess): Promise<unknown> {
  const body = (await (await call(agent, 'GET', '/v1/agent/connect/ca/roots')).json()) as {
    ActiveRootID: string;
    TrustDomain: string;
    Roots: { ID: string; RootCert: string }[];
  };
  return { ...body, Roots: body.Roots.map((r) => ({ ID: r.ID, RootCert: r.RootCert })), Index: undefined };
}

/** Rows of the tables a restore must bring back exactly (catalog health moves with the live members). */
function sharedTables(archive: Archive): Record<string, [string, unknown][]> {
  const out: Record<string, [string, unknown][]> = {};
  for (const row of archive.image.rows) {
    if (row.table.startsWith('catalog') || row.table === 'member-status') continue;
    // A TTL session's lease is new after a restore.
    const value =
      row.table === 'sessions' ? { ...(row.value as Record<string, unknown>), lease: undefined } : row.value;
    (out[row.table] ??= []).push([row.key, value]);
  }
  return out;
}

describe('snapshots on a cluster', () => {
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 1 });
    cluster = await startClusterAgents(etcd, { prefix: `/svc-snapshot-${process.pid}/`, headerBrand: 'Consul' });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    await etcd?.stop();
  });

  it('saved through a server, restored through the client agent: every agent reads the restored state', async () => {
    const [a, b, c] = cluster.agents as [AgentProcess, AgentProcess, AgentProcess];
    for (let i = 0; i < 20; i++) expect((await call(a, 'PUT', `/v1/kv/cfg/${i}`, `saved-${i}`)).status).toBe(200);
    for (let i = 0; i < 5; i++)
      expect(
        (await call(b, 'PUT', `/v1/connect/intentions/exact?source=web${i}&destination=db`, '{"Action":"allow"}'))
          .status,
      ).toBe(200);
    const created = await call(a, 'PUT', '/v1/session/create', JSON.stringify({ Name: 'ttl', TTL: '30s' }));
    const session = ((await created.json()) as { ID: string }).ID;
    const roots = await rootsOf(c);

    const saved = await call(a, 'GET', '/v1/snapshot');
    expect(saved.status).toBe(200);
    const bytes = Buffer.from(await saved.arrayBuffer());
    const archive = decodeArchive(bytes);
    expect(archive.meta).toMatchObject({ Backend: 'etcd', Datacenter: 'dc1' });
    expect(Number(saved.headers.get('X-Consul-Index'))).toBe(archive.meta.Index);
    expect(archive.meta.Tables.kv).toBe(20);
    // The CA key lives in the private range: the archive carries it.
    expect(archive.image.privateEntries.some((e) => e.path.startsWith('ca/keys/'))).toBe(true);

    const clientSave = await call(c, 'GET', '/v1/snapshot');
    expect(clientSave.status).toBe(400);
    expect(await clientSave.text()).toMatch(/^snapshot save runs on a server agent/);

    // Later changes through every agent.
    for (let i = 0; i < 10; i++) await call(c, 'PUT', `/v1/kv/cfg/${i}`, `later-${i}`);
    for (let i = 10; i < 15; i++) await call(b, 'DELETE', `/v1/kv/cfg/${i}`);
    await call(a, 'PUT', '/v1/kv/later/only', 'x');
    await call(a, 'PUT', '/v1/connect/intentions/exact?source=api&destination=db', '{"Action":"deny"}');
    await call(b, 'DELETE', '/v1/connect/intentions/exact?source=web0&destination=db');

    const at = await call(c, 'GET', '/v1/kv/cfg/3');
    const index = Number(at.headers.get('X-Consul-Index'));
    const parked = call(c, 'GET', `/v1/kv/cfg/3?index=${index}&wait=60s`);

    const restored = await call(c, 'PUT', '/v1/snapshot', bytes);
    expect(restored.status, await restored.clone().text()).toBe(200);

    const woke = await parked;
    expect(woke.status).toBe(200);
    expect(Number(woke.headers.get('X-Consul-Index'))).toBeGreaterThan(index);
    const [entry] = (await woke.json()) as { Value: string }[];
    expect(Buffer.from(entry?.Value ?? '', 'base64').toString()).toBe('saved-3');

    const wantKeys = Array.from({ length: 20 }, (_, i) => `cfg/${i}`).sort();
    const wantIntentions = Array.from({ length: 5 }, (_, i) => `web${i}->db:allow`);
    for (const agent of cluster.agents) {
      // The client agent answered once its own view held the restore; the others' views follow at once.
      await until(
        () => kvKeys(agent),
        (keys) => JSON.stringify(keys) === JSON.stringify(wantKeys),
      );
      await until(
        () => intentionPairs(agent),
        (pairs) => JSON.stringify(pairs) === JSON.stringify(wantIntentions),
      );
      const value = (await (await call(agent, 'GET', '/v1/kv/cfg/7')).json()) as { Value: string }[];
      expect(Buffer.from(value[0]?.Value ?? '', 'base64').toString()).toBe('saved-7');
      const info = (await (await call(agent, 'GET', `/v1/session/info/${session}`)).json()) as { ID: string }[];
      expect(info.map((s) => s.ID)).toEqual([session]);
      expect(await rootsOf(agent)).toEqual(roots);
    }
    // The TTL session's new lease is a live etcd lease: a renew through another server finds it.
    const renewed = await call(b, 'PUT', `/v1/session/renew/${session}`);
    expect(renewed.status, await renewed.clone().text()).toBe(200);

    // Table by table, a save through the other server is the saved state.
    const again = decodeArchive(Buffer.from(await (await call(b, 'GET', '/v1/snapshot')).arrayBuffer()));
    expect(sharedTables(again)).toEqual(sharedTables(archive));
    expect(again.image.privateEntries).toEqual(archive.image.privateEntries);
  });

  it('a client agent refuses an archive larger than one etcd request can carry, and nothing changes', async () => {
    const [a, , c] = cluster.agents as [AgentProcess, AgentProcess, AgentProcess];
    const before = await kvKeys(a);
    const big = Buffer.alloc(1024 * 1024 + 1, 1);
    const res = await call(c, 'PUT', '/v1/snapshot', big);
    expect(res.status).toBe(413);
    expect(await res.text()).toBe(
      `snapshot archive of ${big.length} bytes is over the 1048576 bytes a client agent can forward to a server (etcd's request limit): restore it through a server agent`,
    );
    const corrupt = await call(c, 'PUT', '/v1/snapshot', Buffer.from('not an archive'));
    expect(corrupt.status).toBe(500);
    expect(await corrupt.text()).toMatch(/^failed to decompress snapshot: /);
    expect(await kvKeys(a)).toEqual(before);
  });
});
