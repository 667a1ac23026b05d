// `svc-agent lock` as Consul's `consul lock`: two locks on one prefix run their children one after
// the other; `-n 2` runs two at once and keeps a third waiting; `-timeout` on a held lock gives up
// in Consul's words (exit 1); a lock lost (its session destroyed) or a SIGTERM to the command
// terminates the child, and the key is cleaned up; `-child-exit-code` makes a failed child exit 2.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN, runCli, startAgent, type AgentProcess } from './support/agent-process.js';

// The child runs through $SHELL -c, as Consul's; the test's shell is sh whatever the caller's is.
const ENV = { SHELL: '/bin/sh' };

interface LockRun {
  readonly exited: Promise<number | null>;
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly child: ChildProcess;
}

describe('svc-agent lock', { timeout: 60_000 }, () => {
  let agent: AgentProcess;
  let dir: string;
  const started: ChildProcess[] = [];

  beforeAll(async () => {
    agent = await startAgent();
    dir = await mkdtemp(join(tmpdir(), 'svc-lock-'));
  });
  afterAll(async () => {
    for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await agent?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  /** Starts `svc-agent lock` against the agent, its output kept. */
  function lock(...args: string[]): LockRun {
    const child = spawn(process.execPath, [MAIN, 'lock', '-http-addr', agent.url, ...args], {
      env: { ...process.env, ...ENV },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    started.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    return { exited, stdout: () => stdout, stderr: () => stderr, child };
  }

  const lines = async (file: string): Promise<string[]> =>
    (await readFile(file, 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');

  /** Polls until `ready` holds of what `read` gives (never a fixed sleep as the assertion). */
  async function until<T>(read: () => Promise<T>, ready: (value: T) => boolean, what: string): Promise<T> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const value = await read();
      if (ready(value)) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  const sessionsNamed = async (name: string): Promise<number> =>
    ((await (await fetch(`${agent.url}/v1/session/list`)).json()) as { Name: string }[]).filter((s) => s.Name === name)
      .length;

  /** A child that notes its start, waits for `gate` to exist, and notes its end. */
  const gated = (file: string, gate: string, id: string): string =>
    `echo start ${id} >> ${file}; while [ ! -e ${gate} ]; do sleep 0.05; done; echo end ${id} >> ${file}`;

  it('runs the children of two locks on one prefix one after the other, and removes the key after', async () => {
    const file = join(dir, 'mutex.log');
    const gate = join(dir, 'mutex.gate');
    const a = lock('-name', 'mutex', 'jobs/mutex', gated(file, gate, 'a'));
    const b = lock('-name', 'mutex', 'jobs/mutex', gated(file, gate, 'b'));
    await until(
      () => lines(file),
      (l) => l.length >= 1,
      'the first child',
    );
    // Both contend: each has its session; only one child has started.
    await until(
      () => sessionsNamed('mutex'),
      (n) => n === 2,
      'both sessions',
    );
    expect(await lines(file)).toHaveLength(1);
    await writeFile(gate, '');
    expect([await a.exited, await b.exited], a.stderr() + b.stderr()).toEqual([0, 0]);
    const log = await lines(file);
    const first = log[0]?.split(' ')[1];
    const second = first === 'a' ? 'b' : 'a';
    expect(log).toEqual([`start ${first}`, `end ${first}`, `start ${second}`, `end ${second}`]);
    expect((await fetch(`${agent.url}/v1/kv/jobs/mutex/.lock`)).status).toBe(404);
    expect(await sessionsNamed('mutex')).toBe(0);
  });

  it('-n 2 runs two children at once and keeps the third waiting until a slot frees', async () => {
    const file = join(dir, 'sem.log');
    const gate = join(dir, 'sem.gate');
    const runs = ['a', 'b', 'c'].map((id) => lock('-n', '2', '-name', 'sem', 'jobs/sem', gated(file, gate, id)));
    await until(
      () => lines(file),
      (l) => l.length >= 2,
      'two children',
    );
    // The third has its contender key (Consul's prefix/<session>) and is waiting on the holders record.
    const contenders = async (): Promise<number> => {
      const res = await fetch(`${agent.url}/v1/kv/jobs/sem?recurse`);
      const pairs = res.status === 200 ? ((await res.json()) as { Key: string; Session?: string }[]) : [];
      return pairs.filter((p) => p.Key !== 'jobs/sem/.lock' && p.Session !== undefined).length;
    };
    await until(contenders, (n) => n === 3, 'three contenders');
    const record = (await (await fetch(`${agent.url}/v1/kv/jobs/sem/.lock`)).json()) as { Value: string }[];
    const holders = JSON.parse(Buffer.from(record[0]!.Value, 'base64').toString()) as {
      Limit: number;
      Holders: Record<string, boolean>;
    };
    expect([holders.Limit, Object.keys(holders.Holders).length]).toEqual([2, 2]);
    expect((await lines(file)).filter((l) => l.startsWith('start'))).toHaveLength(2);
    await writeFile(gate, '');
    expect(await Promise.all(runs.map((r) => r.exited))).toEqual([0, 0, 0]);
    let running = 0;
    let most = 0;
    for (const line of await lines(file)) {
      running += line.startsWith('start') ? 1 : -1;
      most = Math.max(most, running);
    }
    const log = await lines(file);
    expect([most, log.filter((l) => l.startsWith('end')).length, running]).toEqual([2, 3, 0]);
    expect((await fetch(`${agent.url}/v1/kv/jobs/sem?recurse`)).status).toBe(404);
  });

  it('-timeout on a held lock gives up in Consul words, exit 1, its session ended', async () => {
    const file = join(dir, 'timeout.log');
    const gate = join(dir, 'timeout.gate');
    const holder = lock('jobs/timeout', gated(file, gate, 'holder'));
    await until(
      () => lines(file),
      (l) => l.length === 1,
      'the holder',
    );
    const waited = await runCli(
      [
        'lock',
        '-http-addr',
        agent.url,
        '-name',
        'waiter',
        '-timeout',
        '500ms',
        'jobs/timeout',
        `echo never >> ${file}`,
      ],
      ENV,
    );
    expect([waited.code, waited.stderr]).toEqual([1, 'Shutdown triggered or timeout during lock acquisition\n']);
    expect(await sessionsNamed('waiter')).toBe(0);
    await writeFile(gate, '');
    expect(await holder.exited).toBe(0);
    expect(await lines(file)).toEqual(['start holder', 'end holder']);
  });

  /** A child that notes its start and, on SIGTERM, `term`; it runs until then. */
  const terminable = (file: string): string =>
    `trap 'echo term >> ${file}; exit 0' TERM; echo start >> ${file}; while :; do sleep 0.1; done`;

  it('terminates the child when the lock is lost (its session destroyed)', async () => {
    const file = join(dir, 'lost.log');
    const run = lock('-verbose', 'jobs/lost', terminable(file));
    await until(
      () => lines(file),
      (l) => l.length === 1,
      'the child',
    );
    const [entry] = (await (await fetch(`${agent.url}/v1/kv/jobs/lost/.lock`)).json()) as { Session: string }[];
    const destroyed = await fetch(`${agent.url}/v1/session/destroy/${entry!.Session}`, { method: 'PUT' });
    expect(await destroyed.text()).toBe('true');
    // Consul's lock exits 0 after a lost lock; the child was told with SIGTERM.
    expect(await run.exited, run.stderr()).toBe(0);
    expect(await lines(file)).toContain('term');
    expect(run.stdout()).toContain('Lock lost, killing child\n');
    expect(run.stdout()).toContain('Child terminated\n');
    expect((await fetch(`${agent.url}/v1/kv/jobs/lost/.lock`)).status).toBe(404);
  });

  it('on SIGTERM terminates the child, releases the lock and exits', async () => {
    const file = join(dir, 'sigterm.log');
    const run = lock('-verbose', '-name', 'sigterm', 'jobs/sigterm', terminable(file));
    await until(
      () => lines(file),
      (l) => l.length === 1,
      'the child',
    );
    run.child.kill('SIGTERM');
    expect(await run.exited, run.stderr()).toBe(0);
    expect(await lines(file)).toContain('term');
    expect(run.stdout()).toContain('Shutdown triggered, killing child\n');
    expect((await fetch(`${agent.url}/v1/kv/jobs/sigterm/.lock`)).status).toBe(404);
    expect(await sessionsNamed('sigterm')).toBe(0);
  });

  it("-child-exit-code: 2 for a failed child (Consul's rule), 0 without the flag or for a child that succeeded", async () => {
    const base = ['lock', '-http-addr', agent.url];
    const failed = await runCli([...base, '-child-exit-code', 'jobs/code', 'exit 3'], ENV);
    expect([failed.code, failed.stderr]).toEqual([2, 'Error running handler: exit status 3\n']);
    const ignored = await runCli([...base, 'jobs/code', 'exit 3'], ENV);
    expect(ignored.code).toBe(0);
    const direct = await runCli([...base, '-child-exit-code', '-shell=false', 'jobs/code', 'true'], ENV);
    expect([direct.code, direct.stderr]).toEqual([0, '']);
    const held = await runCli([...base, 'jobs/code', 'echo "$CONSUL_LOCK_HELD"'], ENV);
    expect([held.code, held.stdout]).toEqual([0, 'true\n']);
  });

  it('says in one line what is missing, exit 1', async () => {
    const none = await runCli(['lock', '-http-addr', agent.url, 'jobs/none']);
    expect([none.code, none.stderr]).toEqual([1, 'Key prefix and child command must be specified\n']);
    const zero = await runCli(['lock', '-http-addr', agent.url, '-n', '0', 'jobs/none', 'true']);
    expect([zero.code, zero.stderr]).toEqual([1, 'Lock holder limit must be positive\n']);
  });
});
