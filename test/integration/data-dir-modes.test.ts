// Files under data_dir are for the agent's owner alone, whatever the umask: the WAL and the
// snapshot hold the CA root's key and every ACL secret (src/core/private-files.ts). Another user
// (nobody) reads no byte of any of them, and a data dir left looser is tightened at start.
import { spawnSync } from 'node:child_process';
import { chmod, lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, tempDir, type AgentProcess } from './support/agent-process.js';

const MANAGEMENT = '5d1b3a6c-1f2e-4c3b-9a8d-7e6f5a4b3c2d';

interface Entry {
  readonly path: string;
  readonly mode: number;
  readonly dir: boolean;
}

/** Every file and folder under `dir` (symlinks left out: the state lock is one, and its mode means nothing). */
async function walk(dir: string): Promise<Entry[]> {
  const entries: Entry[] = [];
  const visit = async (path: string): Promise<void> => {
    const stats = await lstat(path);
    if (stats.isSymbolicLink()) return;
    entries.push({ path, mode: stats.mode & 0o777, dir: stats.isDirectory() });
    if (stats.isDirectory()) for (const name of await readdir(path)) await visit(join(path, name));
  };
  await visit(dir);
  return entries;
}

/** Reads `path` as the user nobody: what it got on stdout, and whether it failed. */
function readAsNobody(path: string): { bytes: number; failed: boolean } {
  const run = spawnSync('setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', 'cat', path]);
  return { bytes: run.stdout.length, failed: run.status !== 0 };
}

describe('data_dir file modes', () => {
  let previousUmask: number;
  let parent: { path: string; remove: () => Promise<void> };
  let dataDir: string;
  let agent: AgentProcess;
  const config = { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } } };
  const call = async (method: string, path: string, body?: unknown): Promise<Response> => {
    const res = await fetch(`${agent.url}${path}`, {
      method,
      headers: { 'X-Svc-Token': MANAGEMENT },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    expect(res.status, `${method} ${path}: ${await res.clone().text()}`).toBe(200);
    return res;
  };

  beforeAll(async () => {
    previousUmask = process.umask(0o022);
    parent = await tempDir();
    // Others may enter the parent: only the agent's own modes keep them out of data_dir.
    await chmod(parent.path, 0o755);
    dataDir = join(parent.path, 'data');
    agent = await startAgent({ dataDir, config });
  });
  afterAll(async () => {
    await agent.stop();
    await parent.remove();
    process.umask(previousUmask);
  });

  it('writes every file 0600 in 0700 folders under umask 022, and nobody reads a byte', async () => {
    // Secrets of every kind: a token, a rotated CA's key, KV, a local registration; then enough
    // KV to pass the snapshot threshold (64 MiB of WAL), so the snapshot is written too.
    await call('PUT', '/v1/acl/token', { Description: 'a secret', Policies: [] });
    await call('PUT', '/v1/connect/ca/configuration', {
      Provider: 'consul',
      Config: { PrivateKeyType: 'ec', PrivateKeyBits: 384 },
    });
    await call('PUT', '/v1/agent/service/register', { Name: 'web', Port: 8080 });
    const value = 'v'.repeat(500 * 1024);
    for (let i = 0; i < 140; i++) await call('PUT', `/v1/kv/fill/${i}`, value);
    await agent.waitForLog((line) => line.msg === 'state snapshot written');
    const entries = await walk(dataDir);
    const files = entries.filter((e) => !e.dir);
    expect(files.map((f) => f.path.slice(dataDir.length)).sort()).toEqual(
      expect.arrayContaining(['/node-id', '/state/snapshot.bin', '/state/durable-index']),
    );
    expect(files.some((f) => /\/state\/wal-\d+\.log$/.test(f.path))).toBe(true);
    for (const entry of entries) {
      expect([entry.path, entry.mode.toString(8)]).toEqual([entry.path, entry.dir ? '700' : '600']);
    }
    for (const file of files)
      expect([file.path, readAsNobody(file.path)]).toEqual([file.path, { bytes: 0, failed: true }]);
  });

  it('tightens a data dir left readable by others at start, with one warning', async () => {
    await agent.stop();
    for (const entry of await walk(dataDir)) await chmod(entry.path, entry.dir ? 0o755 : 0o644);
    agent = await startAgent({ dataDir, config });
    const warnings = agent.logs.filter((line) => String(line.msg).startsWith('data_dir was readable by other users'));
    expect(warnings).toHaveLength(1);
    for (const entry of await walk(dataDir)) expect(entry.mode & 0o077, entry.path).toBe(0);
    // The agent serves from the tightened directory as before.
    expect(await (await call('GET', '/v1/kv/fill/0?raw')).text()).toHaveLength(500 * 1024);
  });
});
