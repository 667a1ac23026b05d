// The agent's leaf-signing threads run as `connect.signing_priority` says (nice +10 by default, the
// process's priority with "normal"), the deprecated "idle" runs them at +10 too, and leaves are
// issued whatever the priority.
import { getPriority } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { createAgent, type Agent } from '../../src/agent/index.js';
import { loadConfig } from '../../src/config/load.js';
import type { RawConfig } from '../../src/config/schema.js';
import { procThreadsAvailable, threadPriority } from '../support/proc-threads.js';
import { recordingLogger, type LogEntry } from '../support/recording-logger.js';

/** Waits for the signing threads' report; the hang guard is the test's timeout. */
const reportOf = async (entries: readonly LogEntry[]): Promise<LogEntry> => {
  for (;;) {
    const found = entries.find((e) => e.msg?.startsWith('leaf-signing threads') === true);
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

describe.runIf(procThreadsAvailable)('connect.signing_priority', () => {
  let agent: Agent | undefined;
  afterEach(() => agent?.close());
  const processNice = getPriority();

  const start = async (connect: NonNullable<RawConfig['connect']>) => {
    const log = recordingLogger();
    const warnings: string[] = [];
    const config = loadConfig({
      files: [],
      flags: { ports: { http: 0 }, client_addr: '127.0.0.1', connect },
      dev: true,
      warn: (w) => warnings.push(w),
    });
    agent = await createAgent(config, { log });
    const report = await reportOf(log.entries);
    const tid = report.obj['tid'] as number;
    return { report, warnings, kernelNice: threadPriority(process.pid, tid)?.nice };
  };

  it('runs them at nice +10 by default, and says so', async () => {
    const { report, kernelNice } = await start({});
    expect(report).toEqual({
      level: 'debug',
      obj: { signingPriority: 'low', nice: Math.min(19, processNice + 10), tid: expect.any(Number) },
      msg: 'leaf-signing threads scheduled',
    });
    expect(kernelNice).toBe(Math.min(19, processNice + 10));
  });

  it('leaves them at the process\'s priority with "normal", and still signs', async () => {
    const { report, kernelNice } = await start({ signing_priority: 'normal' });
    expect(report).toEqual({
      level: 'debug',
      obj: { signingPriority: 'normal', nice: processNice, tid: expect.any(Number) },
      msg: 'leaf-signing threads scheduled',
    });
    expect(kernelNice).toBe(processNice);
    const leaf = await fetch(`http://127.0.0.1:${await agent!.listen()}/v1/agent/connect/ca/leaf/web`);
    expect(leaf.status).toBe(200);
    expect(((await leaf.json()) as { CertPEM: string }).CertPEM).toContain('BEGIN CERTIFICATE');
  });

  it('takes the deprecated "idle" as "low", with a warning', async () => {
    const { report, warnings, kernelNice } = await start({ signing_priority: 'idle' } as unknown as NonNullable<
      RawConfig['connect']
    >);
    expect(warnings).toEqual([
      expect.stringMatching(/^command line: connect\.signing_priority "idle" is deprecated and means "low"/),
    ]);
    expect(report.obj).toMatchObject({ signingPriority: 'low' });
    expect(kernelNice).toBe(Math.min(19, processNice + 10));
  });
});
