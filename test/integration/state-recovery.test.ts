// The real agent on a damaged or full data directory: a cut WAL refuses the start (exit 1, the
// files and indexes named) until -accept-state-loss; a full disk is served read-only and written
// again once space is freed, without a restart, and an agent starts read-only on a full disk.
import { readdir, stat, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cannotMount, mountSmallFilesystem, type SmallFilesystem } from '../support/small-filesystem.js';
import { runCli, startAgent, tempDir, type AgentProcess } from './support/agent-process.js';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function started(dataDir: string, args: string[] = []): Promise<AgentProcess> {
  const agent = await startAgent({ dataDir, args });
  cleanups.push(() => agent.stop());
  return agent;
}

async function put(agent: AgentProcess, key: string, body: string): Promise<Response> {
  return fetch(`${agent.url}/v1/kv/${key}`, { method: 'PUT', body });
}

async function value(agent: AgentProcess, key: string): Promise<string | undefined> {
  const res = await fetch(`${agent.url}/v1/kv/${key}?raw`);
  return res.status === 200 ? res.text() : undefined;
}

describe('a WAL cut before its last acknowledged write', () => {
  it('refuses the start with exit 1 naming what was lost; -accept-state-loss starts from what is left', async () => {
    const data = await tempDir();
    cleanups.push(data.remove);
    const first = await started(data.path);
    for (let i = 1; i <= 200; i++) expect((await put(first, `k${i}`, `v${i}-${'x'.repeat(100)}`)).status).toBe(200);
    expect(await first.stop()).toBe(0);

    const stateDir = join(data.path, 'state');
    const wal = join(stateDir, (await readdir(stateDir)).find((f) => f.startsWith('wal-')) as string);
    await truncate(wal, Math.floor((await stat(wal)).size / 2));

    const refused = await runCli(['agent', '-data-dir', data.path, '-http-port', '0']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /wal-\d+\.log ends with a damaged record at byte \d+ at index \d+, but durable-index records index \d+ as acknowledged: indexes \d+-\d+ are lost/,
    );
    expect(refused.stderr).toContain('-accept-state-loss');

    const accepted = await started(data.path, ['-accept-state-loss']);
    expect(accepted.logs.some((l) => String(l.msg).includes('accepting lost state'))).toBe(true);
    expect(await value(accepted, 'k1')).toMatch(/^v1-/);
    expect(await value(accepted, 'k200')).toBeUndefined();
    expect((await put(accepted, 'after', 'x')).status).toBe(200);
    expect(await accepted.stop()).toBe(0);

    // The loss was accepted once; the next start is an ordinary one.
    const again = await started(data.path);
    expect(await value(again, 'after')).toBe('x');
  });
});

describe.skipIf(cannotMount() !== undefined)('the agent on a full disk', () => {
  async function smallFs(): Promise<SmallFilesystem> {
    const fs = await mountSmallFilesystem(8);
    cleanups.push(() => fs.unmount());
    return fs;
  }

  async function putWhenWritable(agent: AgentProcess, key: string): Promise<void> {
    // Waits for the store's disk retry (every second) to find room again.
    while ((await put(agent, key, 'resumed')).status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
  }

  it('answers writes 503 with one log line, keeps serving reads, and writes again once space is freed', async () => {
    const fs = await smallFs();
    const dataDir = join(fs.dir, 'data');
    const agent = await started(dataDir);
    expect((await put(agent, 'before', 'kept')).status).toBe(200);

    await fs.fill();
    const refused = await put(agent, 'big', 'z'.repeat(256 * 1024));
    expect(refused.status).toBe(503);
    expect(await refused.text()).toContain('is full; the state store is read-only until space is freed');
    for (let i = 0; i < 5; i++) expect((await put(agent, `refused-${i}`, 'x')).status).toBe(503);
    expect(await value(agent, 'before')).toBe('kept');
    expect(agent.logs.filter((l) => String(l.msg).includes('disk full'))).toHaveLength(1);
    expect(agent.logs.filter((l) => l.msg === 'request failed')).toEqual([]);

    await fs.free();
    await putWhenWritable(agent, 'after');
    expect(await value(agent, 'after')).toBe('resumed');
    expect(agent.logs.some((l) => String(l.msg).includes('writes resumed'))).toBe(true);
  });

  it('starts read-only on a disk that is already full, serving reads, and writes once space is freed', async () => {
    const fs = await smallFs();
    const dataDir = join(fs.dir, 'data');
    const first = await started(dataDir);
    expect((await put(first, 'before', 'kept')).status).toBe(200);
    expect(await first.stop()).toBe(0);

    await fs.fill();
    const agent = await started(dataDir);
    expect(agent.logs.some((l) => l.level === 'warn' && String(l.msg).includes('disk full'))).toBe(true);
    expect(await value(agent, 'before')).toBe('kept');
    expect((await put(agent, 'refused', 'x')).status).toBe(503);

    await fs.free();
    await putWhenWritable(agent, 'after');
    expect(await agent.stop()).toBe(0);
  });
});
