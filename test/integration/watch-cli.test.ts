// `svc-agent watch` as Consul's `consul watch`: without a handler, the view's JSON once (a missing
// key is null); with one, the handler gets the JSON on its standard input and CONSUL_INDEX, first for
// what is there and then on each change (an event watch: only the events since the last one handed
// on), until SIGTERM; a watch without a type, or of a type there is none of, is one line, exit 1.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN, runCli, startAgent, type AgentProcess } from './support/agent-process.js';

describe('svc-agent watch', () => {
  let agent: AgentProcess;
  let dir: string;

  beforeAll(async () => {
    agent = await startAgent();
    dir = await mkdtemp(join(tmpdir(), 'svc-watch-'));
  });
  afterAll(async () => {
    await agent?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it("prints a key's entry once without a handler, null when it is missing", async () => {
    await fetch(`${agent.url}/v1/kv/watched`, { method: 'PUT', body: 'v1' });
    const shown = await runCli(['watch', '-http-addr', agent.url, '-type', 'key', '-key', 'watched']);
    expect(shown.code, shown.stderr).toBe(0);
    const entry = JSON.parse(shown.stdout) as { Key: string; Value: string };
    expect([entry.Key, Buffer.from(entry.Value, 'base64').toString()]).toEqual(['watched', 'v1']);
    expect(shown.stdout).toMatch(/^\{\n {4}"/);
    const missing = await runCli(['watch', '-http-addr', agent.url, '-type', 'key', '-key', 'no-such-key']);
    expect([missing.code, missing.stdout]).toEqual([0, 'null\n']);
  });

  it('hands each new event to the handler, once, with CONSUL_INDEX, until SIGTERM', async () => {
    const out = join(dir, 'events.jsonl');
    const handler = `{ printf '%s ' "$CONSUL_INDEX"; cat; } >> ${out}`;
    const watch = spawn(
      process.execPath,
      [MAIN, 'watch', '-http-addr', agent.url, '-type', 'event', '-name', 'deploy', handler],
      {
        stdio: ['ignore', 'inherit', 'pipe'],
      },
    );
    const lines = async (): Promise<string[]> =>
      (await readFile(out, 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');
    const until = async (n: number): Promise<string[]> => {
      for (;;) {
        const now = await lines();
        if (now.length >= n) return now;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    await until(1);
    const fired: string[] = [];
    for (const payload of ['one', 'two']) {
      const res = await fetch(`${agent.url}/v1/event/fire/deploy`, { method: 'PUT', body: payload });
      fired.push(((await res.json()) as { ID: string }).ID);
      await fetch(`${agent.url}/v1/event/fire/other`, { method: 'PUT' });
      await until(fired.length + 1);
    }
    watch.kill('SIGTERM');
    const [code] = (await once(watch, 'exit')) as [number];
    expect(code).toBe(0);
    const calls = (await lines()).map((line) => {
      const space = line.indexOf(' ');
      return {
        index: line.slice(0, space),
        ids: (JSON.parse(line.slice(space + 1)) as { ID: string }[]).map((e) => e.ID),
      };
    });
    expect(calls.map((c) => c.ids)).toEqual([[], [fired[0]], [fired[1]]]);
    expect(calls[0]!.index).toBe('1');
  });

  it('says in one line what is missing or unknown, exit 1', async () => {
    const none = await runCli(['watch', '-http-addr', agent.url]);
    expect([none.code, none.stdout]).toEqual([1, '']);
    expect(none.stderr).toMatch(/^Watch type must be specified\n/);
    const odd = await runCli(['watch', '-http-addr', agent.url, '-type', 'nope']);
    expect([odd.code, odd.stdout]).toEqual([1, '']);
    expect(odd.stderr).toContain('Unsupported watch type: nope');
  });
});
