// The agent's leaf-signing threads are scheduled as `connect.signing_priority` says, and the agent
// warns when SCHED_IDLE cannot be had (here: no chrt on the PATH the signing threads inherit),
// while leaves are still issued.
import { afterEach, describe, expect, it } from 'vitest';
import { createAgent, type Agent } from '../../src/agent.js';
import { loadConfig } from '../../src/config/load.js';
import { recordingLogger } from '../support/recording-logger.js';

const until = async (done: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
};

describe.runIf(process.platform === 'linux')('connect.signing_priority', () => {
  let agent: Agent | undefined;
  afterEach(() => agent?.close());

  const start = async (priority: 'idle' | 'low', path?: string) => {
    const log = recordingLogger();
    const config = loadConfig({ files: [], flags: { ports: { http: 0 }, client_addr: '127.0.0.1', connect: { signing_priority: priority } }, dev: true });
    const saved = process.env.PATH;
    if (path !== undefined) process.env.PATH = path;
    try {
      agent = await createAgent(config, { log });
    } finally {
      process.env.PATH = saved;
    }
    await until(() => log.entries.some((e) => e.msg?.startsWith('leaf-signing threads') === true));
    return log.entries.filter((e) => e.msg?.startsWith('leaf-signing threads') === true);
  };

  it("reports 'idle' when the threads run under SCHED_IDLE", async () => {
    expect(await start('idle')).toEqual([{ level: 'debug', obj: { signingPriority: 'idle' }, msg: 'leaf-signing threads scheduled' }]);
  });

  it("reports 'low' when asked for", async () => {
    expect(await start('low')).toEqual([{ level: 'debug', obj: { signingPriority: 'low' }, msg: 'leaf-signing threads scheduled' }]);
  });

  it('warns when SCHED_IDLE cannot be had, and still signs', async () => {
    const [entry] = await start('idle', '/nonexistent');
    expect(entry?.level).toBe('warn');
    expect(entry?.msg).toBe('leaf-signing threads could not run under SCHED_IDLE; they run at nice +10');
    expect(entry?.obj).toMatchObject({ signingPriority: 'idle', policy: expect.stringMatching(/^chrt failed: .*ENOENT/) });
    const leaf = await fetch(`http://127.0.0.1:${await agent!.listen()}/v1/agent/connect/ca/leaf/web`);
    expect(leaf.status).toBe(200);
    expect(((await leaf.json()) as { CertPEM: string }).CertPEM).toContain('BEGIN CERTIFICATE');
  });
});
