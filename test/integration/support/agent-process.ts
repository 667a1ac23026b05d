// Starts the real compiled agent (dist/) as a child process on an ephemeral port, reads its
// start-up line for the bound address, and stops it by signal. `npm test` builds dist/ first.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

export const MAIN = resolve(import.meta.dirname, '../../../dist/src/cli/main.js');

export interface AgentProcess {
  readonly port: number;
  readonly url: string;
  readonly child: ChildProcess;
  /** Every log line the agent wrote to stdout so far, parsed. */
  readonly logs: Record<string, unknown>[];
  readonly stderr: () => string;
  /** Resolves with the first log line that matches, from line `from` on (already written or still to come). */
  waitForLog(match: (line: Record<string, unknown>) => boolean, from?: number): Promise<Record<string, unknown>>;
  /** Sends a signal and resolves with the exit code (or the signal name). */
  stop(signal?: NodeJS.Signals): Promise<number | string>;
}

export interface StartOptions {
  /** Extra CLI arguments; `-dev` is added unless `dataDir` is given. */
  readonly args?: readonly string[];
  readonly dataDir?: string;
  /** A config object written to a temp file and passed with -config-file. */
  readonly config?: Record<string, unknown>;
  readonly env?: NodeJS.ProcessEnv;
  /** The Node binary to run it with (another Node line); this process's own by default. */
  readonly node?: string;
  /** Starts it under this open-files limit (util-linux prlimit; see hasPrlimit in test/support/open-files.ts). */
  readonly nofile?: { readonly soft: number; readonly hard: number };
  /** The HTTP port (default 0: any free one); a restarted agent its clients still know takes the one it had. */
  readonly port?: number;
  /** Runs it on a test host (test/support/netns.ts): its command prefix and the address this process reaches it at. */
  readonly host?: { readonly command: readonly string[]; readonly address: string };
}

export async function startAgent(options: StartOptions = {}): Promise<AgentProcess> {
  if (!existsSync(MAIN)) throw new Error(`${MAIN} is missing: run \`npm run build\` (npm test does)`);
  const args = ['agent', '-http-port', String(options.port ?? 0), '-log-json'];
  // SVC_TEST_TRANSPORT runs a test file on another transport by hand; a test's own flag wins.
  if (process.env.SVC_TEST_TRANSPORT) args.push('-http-transport', process.env.SVC_TEST_TRANSPORT);
  args.push(...(options.dataDir === undefined ? ['-dev'] : ['-data-dir', options.dataDir]));
  let configDir: string | undefined;
  if (options.config) {
    configDir = await mkdtemp(join(tmpdir(), 'svc-config-'));
    const file = join(configDir, 'config.json');
    await writeFile(file, JSON.stringify(options.config));
    args.push('-config-file', file);
  }
  args.push(...(options.args ?? []));
  const node = options.node ?? process.execPath;
  const command = [
    ...(options.host?.command ?? []),
    ...(options.nofile === undefined ? [] : ['prlimit', `--nofile=${options.nofile.soft}:${options.nofile.hard}`]),
    node,
    MAIN,
  ];
  const child = spawn(command[0] as string, [...command.slice(1), ...args], {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const logs: Record<string, unknown>[] = [];
  const waiters = new Set<{
    match: (line: Record<string, unknown>) => boolean;
    done: (line: Record<string, unknown>) => void;
  }>();
  const exited = new Promise<number | string>((done) =>
    child.once('exit', (code, signal) => {
      if (configDir) void rm(configDir, { recursive: true, force: true });
      done(code ?? signal ?? -1);
    }),
  );
  const started = new Promise<Record<string, unknown>>((ok, fail) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      logs.push(entry);
      for (const waiter of waiters) {
        if (!waiter.match(entry)) continue;
        waiters.delete(waiter);
        waiter.done(entry);
      }
      if (entry.msg === 'svc-agent started') ok(entry);
    });
    void exited.then((code) => fail(new Error(`agent exited (${code}) before starting: ${stderr}`)));
  });
  const line = await started;
  const port = Number(
    String(line.address ?? line.httpsAddress)
      .split(':')
      .pop(),
  );
  return {
    port,
    url: `http://${options.host?.address ?? '127.0.0.1'}:${port}`,
    child,
    logs,
    stderr: () => stderr,
    waitForLog(match, from = 0) {
      const seen = logs.slice(from).find(match);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((done) => waiters.add({ match, done }));
    },
    stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Runs the CLI to completion (for commands that should fail fast or print and exit). */
export function runCli(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 10_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [MAIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`CLI did not exit within ${timeoutMs} ms: ${stdout}${stderr}`));
    }, timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

export async function tempDir(prefix = 'svc-data-'): Promise<{ path: string; remove: () => Promise<void> }> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, remove: () => rm(path, { recursive: true, force: true }) };
}

/**
 * Both HTTP transports, for the tests of what each does with the bytes of a request (framing,
 * malformed and pipelined requests): the rest of the suite runs on the default one.
 */
export const TRANSPORTS = ['uws', 'node'] as const;

/** The transport the agent said it serves with in its start-up line (`uws` or `node`). */
export function transportOf(agent: AgentProcess): string {
  return String(agent.logs.find((l) => l.msg === 'svc-agent started')?.transport);
}

/** Every KV key the agent holds: what a refused request must not have written. */
export async function storedKeys(agent: AgentProcess): Promise<string[]> {
  const res = await fetch(`${agent.url}/v1/kv/?keys`);
  return res.status === 404 ? [] : ((await res.json()) as string[]);
}
