// Snapshots on one agent (docs/decisions.md#snapshots), with a data directory and ACLs. Neither npm
// `consul` nor python3-consul has a snapshot call: the archive is saved and restored with fetch and
// with the svc-agent CLI; the state around it is written with npm `consul` and fetch. A round trip:
// save, 1,000 more changes, restore, then a second save equals the first table by table, and a
// blocking read parked before the restore wakes with the restored value; a truncated archive and a
// flipped byte are refused with nothing changed; refusals without acl:write; the CLI's lines.
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Consul from 'consul';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeArchive, type Archive } from '../../src/snapshot/archive.js';
import { runCli, startAgent, type AgentProcess } from './support/agent-process.js';

const ROOT = 'b1a5ad0c-0000-4000-8000-00000000a001';

/** Rows of each table of an archive, as [key, value] by table name. */
function tablesOf(archive: Archive): Map<string, [string, unknown][]> {
  const tables = new Map<string, [string, unknown][]>();
  for (const row of archive.image.rows) {
    const rows = tables.get(row.table) ?? [];
    rows.push([row.key, row.value]);
    tables.set(row.table, rows);
  }
  return tables;
}

describe('snapshots on one agent', () => {
  let agent: AgentProcess;
  let dataDir: string;
  let consul: Consul;

  const call = (method: string, path: string, body?: string | Buffer, token: string | null = ROOT) =>
    fetch(`${agent.url}${path}`, {
      method,
      ...(body === undefined ? {} : { body }),
      ...(token === null ? {} : { headers: { 'X-Consul-Token': token } }),
    });

  /** A 200 answer's JSON (ACL calls: npm consul has only the legacy ACL API). */
  const json = async <T>(method: string, path: string, body: unknown): Promise<T> => {
    const res = await call(method, path, JSON.stringify(body));
    expect(res.status).toBe(200);
    return (await res.json()) as T;
  };
  const createPolicy = (Name: string, Rules: string) => json<{ ID: string }>('PUT', '/v1/acl/policy', { Name, Rules });

  const save = async (): Promise<{ bytes: Buffer; index: number; res: Response }> => {
    const res = await call('GET', '/v1/snapshot');
    expect(res.status).toBe(200);
    return { bytes: Buffer.from(await res.arrayBuffer()), index: Number(res.headers.get('X-Consul-Index')), res };
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-snapshot-'));
    agent = await startAgent({
      dataDir,
      args: ['-node', 'snap-node'],
      config: {
        http_config: { header_brand: 'Consul' },
        acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } },
      },
    });
    consul = new Consul({ host: '127.0.0.1', port: agent.port, defaults: { token: ROOT } });
  });
  afterAll(async () => {
    await agent?.stop();
    if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  });

  it('restores the saved state over 1,000 later changes: every table equals the saved one, and a parked blocking read wakes', async () => {
    // The state saved: KV (npm consul), intentions, a catalog node, an ACL policy and token, a session.
    for (let i = 0; i < 50; i++) await consul.kv.set(`app/config/${i}`, `value-${i}`);
    for (let i = 0; i < 10; i++) {
      const res = await call('PUT', `/v1/connect/intentions/exact?source=web${i}&destination=db`, '{"Action":"allow"}');
      expect(res.status).toBe(200);
    }
    const register = { Node: 'ext-1', Address: '10.0.0.1', Service: { Service: 'redis', Port: 6379 } };
    expect((await call('PUT', '/v1/catalog/register', JSON.stringify(register))).status).toBe(200);
    const policy = await createPolicy('readers', 'key_prefix "" { policy = "read" }');
    await json('PUT', '/v1/acl/token', { Description: 'reader', Policies: [{ ID: policy.ID }] });
    const { ID: session } = await consul.session.create({ name: 'held', lockdelay: '0s' });
    expect(await consul.kv.set({ key: 'app/leader', value: 'me', acquire: session })).toBe(true);

    const first = await save();
    expect(first.res.headers.get('Content-Type')).toBe('application/x-gzip');
    const saved = decodeArchive(first.bytes);
    expect(saved.meta.Index).toBe(first.index);
    expect(saved.meta.Datacenter).toBe('dc1');

    // 1,000 more changes of every kind, in parallel runs of 20.
    const changes: (() => Promise<unknown>)[] = [];
    for (let i = 0; i < 700; i++) changes.push(() => consul.kv.set(`app/config/${i % 80}`, `later-${i}`));
    for (let i = 0; i < 40; i++) changes.push(() => consul.kv.del(`app/config/${i}`));
    for (let i = 0; i < 150; i++)
      changes.push(() =>
        call('PUT', `/v1/connect/intentions/exact?source=api${i}&destination=db`, '{"Action":"deny"}').then((r) => {
          expect(r.status).toBe(200);
        }),
      );
    for (let i = 0; i < 60; i++)
      changes.push(() =>
        call('PUT', '/v1/catalog/register', JSON.stringify({ Node: `later-${i}`, Address: `10.1.0.${i}` })).then(
          (r) => {
            expect(r.status).toBe(200);
          },
        ),
      );
    for (let i = 0; i < 49; i++) changes.push(() => createPolicy(`later-${i}`, ''));
    changes.push(() => consul.session.destroy(session));
    expect(changes.length).toBe(1_000);
    for (let i = 0; i < changes.length; i += 20) await Promise.all(changes.slice(i, i + 20).map((run) => run()));

    // A blocking read parked at the current index, before the restore.
    const now = Number((await call('GET', '/v1/kv/app/config/45')).headers.get('X-Consul-Index'));
    expect(now).toBeGreaterThan(first.index);
    const parked = call('GET', `/v1/kv/app/config/45?index=${now}&wait=60s`);

    const restored = await call('PUT', '/v1/snapshot', first.bytes);
    expect(restored.status).toBe(200);
    expect(await restored.text()).toBe('');

    const woke = await parked;
    expect(woke.status).toBe(200);
    expect(Number(woke.headers.get('X-Consul-Index'))).toBeGreaterThan(now);
    const [entry] = (await woke.json()) as { Value: string }[];
    expect(Buffer.from(entry?.Value ?? '', 'base64').toString()).toBe('value-45');

    // Table by table, the state is the saved one.
    const again = decodeArchive((await save()).bytes);
    const want = tablesOf(saved);
    const got = tablesOf(again);
    expect([...got.keys()].sort()).toEqual([...want.keys()].sort());
    for (const [table, rows] of want) expect({ table, rows: got.get(table) }).toEqual({ table, rows });
    expect(again.meta.Index).toBeGreaterThan(now);

    // And the APIs answer from it at once.
    expect(await consul.kv.get('app/config/0')).toMatchObject({ Value: 'value-0' });
    expect(await consul.kv.get({ key: 'app/leader' })).toMatchObject({ Session: session });
    const intentions = (await (await call('GET', '/v1/connect/intentions')).json()) as unknown[];
    expect(intentions).toHaveLength(10);
    expect((await call('GET', '/v1/catalog/node/later-3')).status).toBe(200);
    expect(await (await call('GET', '/v1/catalog/node/later-3')).json()).toBeNull();
  });

  it('refuses a truncated archive and a flipped byte with nothing changed', async () => {
    const { bytes } = await save();
    await consul.kv.set('app/marker', 'before');
    const state = await save();
    for (const bad of [
      bytes.subarray(0, Math.floor(bytes.length / 2)),
      bytes.subarray(0, bytes.length - 1),
      Buffer.concat([bytes.subarray(0, 100), Buffer.from([(bytes[100] as number) ^ 0x10]), bytes.subarray(101)]),
    ]) {
      const res = await call('PUT', '/v1/snapshot', bad);
      expect(res.status).toBe(500);
      expect(await res.text()).toMatch(/^failed to (decompress snapshot|read snapshot file): /);
    }
    const foreign = await call('PUT', '/v1/snapshot', Buffer.from('not an archive'));
    expect(foreign.status).toBe(500);
    const after = await save();
    expect(after.index).toBe(state.index);
    expect(after.bytes.length).toBeGreaterThan(0);
    expect(tablesOf(decodeArchive(after.bytes))).toEqual(tablesOf(decodeArchive(state.bytes)));
    expect(await consul.kv.get('app/marker')).toMatchObject({ Value: 'before' });
  });

  it("needs acl:write: Consul's refusal texts, and ?stale refused on restore", async () => {
    const anonymous = await call('GET', '/v1/snapshot', undefined, null);
    expect(anonymous.status).toBe(403);
    expect(await anonymous.text()).toContain("Permission denied: anonymous token lacks permission 'acl:write'");
    const policy = await createPolicy('acl-readers', 'acl = "read"');
    const reader = await json<{ AccessorID: string; SecretID: string }>('PUT', '/v1/acl/token', {
      Policies: [{ ID: policy.ID }],
    });
    const { bytes } = await save();
    const refused = await call('PUT', '/v1/snapshot', bytes, reader.SecretID);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toBe(
      `Permission denied: token with AccessorID '${reader.AccessorID}' lacks permission 'acl:write'`,
    );
    const stale = await call('PUT', '/v1/snapshot?stale', bytes);
    expect(stale.status).toBe(500);
    expect(await stale.text()).toBe('stale not allowed for restore');
  });

  it("svc-agent snapshot save, inspect and restore: a 0600 file and Consul's lines", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'svc-snapshot-cli-'));
    try {
      const file = join(dir, 'backup.snap');
      const env = { CONSUL_HTTP_TOKEN: ROOT };
      await consul.kv.set('cli/key', 'saved');
      const saved = await runCli(['snapshot', 'save', '-http-addr', agent.url, file], env);
      expect(saved.stderr).toBe('');
      expect(saved.stdout).toMatch(/^Saved and verified snapshot to index \d+\n$/);
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      const archive = decodeArchive(await readFile(file));
      expect(saved.stdout).toContain(`index ${archive.meta.Index}`);

      const inspect = await runCli(['snapshot', 'inspect', file]);
      expect(inspect.code).toBe(0);
      expect(inspect.stdout).toMatch(
        new RegExp(
          `^ ID {2,}${archive.meta.ID}\n Size {2,}${archive.size}\n Index {2,}${archive.meta.Index}\n Revision {2,}${archive.meta.Index}\n Version {2,}1\n`,
        ),
      );
      expect(inspect.stdout).toMatch(new RegExp(` kv {2,}${archive.meta.Tables.kv} {2,}`));
      expect(inspect.stdout).toContain(' Total ');

      await consul.kv.set('cli/key', 'changed');
      const restored = await runCli(['snapshot', 'restore', '-http-addr', agent.url, file], env);
      expect(restored).toMatchObject({ code: 0, stdout: 'Restored snapshot\n' });
      expect(await consul.kv.get('cli/key')).toMatchObject({ Value: 'saved' });

      const denied = await runCli(['snapshot', 'restore', '-http-addr', agent.url, file]);
      expect(denied.code).toBe(1);
      expect(denied.stderr).toMatch(
        /^Error restoring snapshot: Unexpected response code: 403 \(Permission denied: anonymous token lacks permission 'acl:write'/,
      );
      const missing = await runCli(['snapshot', 'inspect', join(dir, 'none.snap')]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('Error opening snapshot file: open ');
      const bad = join(dir, 'bad.snap');
      await writeFile(bad, 'nope');
      const unreadable = await runCli(['snapshot', 'inspect', bad]);
      expect(unreadable.stderr).toMatch(/^Error verifying snapshot: failed to decompress snapshot: /);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
