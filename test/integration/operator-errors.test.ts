// What an operator sees when the agent cannot start or a reload fails, against the built agent in
// its default text log format: one `==>` line saying what was wrong and where, no stack trace
// (the stack is a debug line, shown with -log-level debug).
import { createServer, type Server } from 'node:net';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startAgent, tempDir } from './support/agent-process.js';
import { makeTlsFiles, type TlsFiles } from '../support/tls-files.js';

const STACK_LINE = /^\s+at /m;
const transport = process.env.SVC_TEST_TRANSPORT ? ['-http-transport', process.env.SVC_TEST_TRANSPORT] : [];

/** Runs `agent` with the arguments and returns what it printed, checking it failed with exit 1. */
async function failedStart(args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  const out = await runCli(['agent', ...transport, ...args]);
  expect(out.code).toBe(1);
  return out;
}

describe('a start-up failure is one line, without a stack', () => {
  let dir: { path: string; remove: () => Promise<void> };
  let taken: Server;
  let port: number;
  beforeAll(async () => {
    dir = await tempDir('svc-operator-');
    taken = createServer();
    await new Promise<void>((done) => taken.listen({ host: '127.0.0.1', port: 0 }, done));
    port = (taken.address() as { port: number }).port;
  });
  afterAll(async () => {
    await new Promise((done) => taken.close(done));
    await dir.remove();
  });

  it('a port in use', async () => {
    const out = await failedStart(['-dev', '-http-port', String(port)]);
    expect(out.stderr).toBe(
      `==> error starting HTTP listener: listen tcp 127.0.0.1:${port}: bind: address already in use\n`,
    );
    expect(out.stdout).not.toMatch(STACK_LINE);
    expect(out.stdout).not.toContain('[ERROR]');
  });

  it('a missing TLS file', async () => {
    const missing = join(dir.path, 'missing.pem');
    const config = join(dir.path, 'tls.json');
    await writeFile(config, JSON.stringify({ tls: { defaults: { cert_file: missing, key_file: missing } } }));
    const out = await failedStart(['-dev', '-http-port', '-1', '-https-port', '0', '-config-file', config]);
    expect(out.stderr).toBe(`==> HTTPS: tls.defaults.cert_file ${missing}: no such file\n`);
    expect(out.stdout).not.toMatch(STACK_LINE);
  });

  it('a data dir that cannot be made', async () => {
    const out = await failedStart(['-data-dir', '/proc/svc-agent-operator-test', '-http-port', '0']);
    expect(out.stderr).toBe(
      '==> cannot create directory /proc/svc-agent-operator-test: /proc does not take new directories\n',
    );
    expect(out.stdout).not.toMatch(STACK_LINE);
  });

  it('a log file that cannot be opened, and a config file that does not parse', async () => {
    const logFile = join(dir.path, 'no-such-dir', 'agent.log');
    expect((await failedStart(['-dev', '-http-port', '0', '-log-file', logFile])).stderr).toBe(
      `==> log_file: cannot open ${logFile}: no such file\n`,
    );
    const bad = join(dir.path, 'bad.hcl');
    await writeFile(bad, 'acl {\n  enabled = \n}\n');
    const out = await failedStart(['-dev', '-http-port', '0', '-config-file', bad]);
    expect(out.stderr).toMatch(new RegExp(`^==> ${bad}: invalid HCL: At 2:[^\\n]*\\n$`));
    expect(out.stdout).toBe('');
  });

  it('shows the stack at debug level, as a debug line before the same one line', async () => {
    const out = await failedStart(['-dev', '-http-port', String(port), '-log-level', 'debug']);
    expect(out.stderr).toBe(
      `==> error starting HTTP listener: listen tcp 127.0.0.1:${port}: bind: address already in use\n`,
    );
    expect(out.stdout).toMatch(
      /\[DEBUG\] agent: start-up failed: error="error starting HTTP listener: [^\n]*\n\s+AgentError: [^\n]*\n\s+at /,
    );
  });
});

describe('a failure while running is one log line', () => {
  let files: TlsFiles;
  beforeAll(async () => {
    files = await makeTlsFiles();
  });
  afterAll(() => files.remove());

  it('a reload whose TLS file is gone: one error line naming it, no stack, and the agent serves on', async () => {
    const certFile = join(files.dir, 'reloaded-cert.pem');
    await writeFile(certFile, await import('node:fs/promises').then((fs) => fs.readFile(files.certFile)));
    const agent = await startAgent({
      args: ['-https-port', '0'],
      config: { tls: { defaults: { cert_file: certFile, key_file: files.keyFile } } },
    });
    try {
      await rm(certFile);
      const from = agent.logs.length;
      agent.child.kill('SIGHUP');
      const failed = await agent.waitForLog((l) => l.msg === 'config reload failed; the running config stays', from);
      expect(failed.err).toEqual({
        message: expect.stringContaining(`tls.defaults.cert_file ${certFile}: no such file`),
      });
      expect(agent.logs.slice(from).filter((l) => l.level === 'error')).toHaveLength(1);
      expect(JSON.stringify(agent.logs)).not.toMatch(/\\n\s+at /);
      expect((await fetch(`${agent.url}/v1/status/leader`)).status).toBe(200);
    } finally {
      await agent.stop();
    }
  });
});
