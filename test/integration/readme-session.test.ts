// The README's first example is what a newcomer types: its indexes must be the ones a fresh `-dev`
// agent gives, or the blocking query it shows answers at once instead of parking.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const session = /## A session with curl\n+```console\n([\s\S]*?)```/.exec(README)?.[1] ?? '';

function shown(pattern: RegExp, what: string): number {
  const m = pattern.exec(session);
  if (m?.[1] === undefined) throw new Error(`README's curl session no longer shows ${what}`);
  return Number(m[1]);
}

describe("README's curl session", () => {
  let agent: AgentProcess;
  beforeAll(async () => {
    agent = await startAgent();
  });
  afterAll(() => agent.stop());

  it('shows the indexes a fresh -dev agent gives, so its blocking query parks until the write', async () => {
    const url = `${agent.url}/v1/kv/app/greeting`;
    expect(await (await fetch(url, { method: 'PUT', body: 'hello' })).json()).toBe(true);
    const [entry] = (await (await fetch(url)).json()) as { CreateIndex: number; ModifyIndex: number }[];
    expect(shown(/"CreateIndex":(\d+)/, 'the entry read back')).toBe(entry?.CreateIndex);
    expect(shown(/"ModifyIndex":(\d+)/, 'the entry read back')).toBe(entry?.ModifyIndex);
    const blockingIndex = shown(/greeting\?index=(\d+)&wait=/, 'the blocking query');
    expect(blockingIndex).toBe(entry?.ModifyIndex);

    const parked = fetch(`${url}?index=${blockingIndex}&wait=30s`);
    expect(await (await fetch(url, { method: 'PUT', body: 'bonjour' })).json()).toBe(true);
    const woken = await parked;
    const [after] = (await woken.json()) as { Value: string }[];
    expect(Buffer.from(after?.Value ?? '', 'base64').toString()).toBe('bonjour');
    expect(Number(woken.headers.get('x-svc-index'))).toBe(shown(/X-Svc-Index: (\d+)/, 'the woken index'));
  });
});
