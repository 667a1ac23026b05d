// `svc-agent loadtest mesh` against an agent started here, ACLs on: the run starts its own sidecar
// pair (two `connect proxy` children) and echo application, and its JSON result counts what went
// through: served connections under an allow, refused ones (the application seeing none) under
// -deny, bytes over long connections (the application's accepted count agrees); after the run its
// proxies are gone and nothing it registered is left. With -upstream it starts and registers
// nothing, and loads the listener given.
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startAgent, tempDir, type AgentProcess } from './support/agent-process.js';

const ROOT = 'mesh-root';

interface Result {
  scenario: string;
  unit: string;
  prefix: string;
  settings: { mode: string; connectionMode: string; deny: boolean; proxyPids: number[] };
  summary: {
    requests: number;
    ok: number;
    errors: Record<string, number>;
    askedRps: number | null;
    outcomes: Record<string, { requests: number; latencyUs: { p50: number } }>;
  };
  facts: Record<string, number | string | null>;
  crossCheck: { agrees: boolean | null } | null;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('svc-agent loadtest mesh', () => {
  let agent: AgentProcess;
  let dir: { path: string; remove: () => Promise<void> };
  beforeAll(async () => {
    dir = await tempDir('svc-loadtest-mesh-');
    agent = await startAgent({
      config: { acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } } },
    });
  });
  afterAll(async () => {
    await agent.stop();
    await dir.remove();
  });

  const mesh = async (name: string, ...args: string[]): Promise<Result> => {
    const out = join(dir.path, `${name}.json`);
    const run = await runCli(
      ['loadtest', 'mesh', '-warmup', '500ms', '-out', out, ...args],
      { SVC_HTTP_ADDR: `127.0.0.1:${agent.port}`, SVC_HTTP_TOKEN: ROOT },
      60_000,
    );
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(await readFile(out, 'utf8')) as Result;
    expect(result.settings.proxyPids).toHaveLength(2);
    for (const pid of result.settings.proxyPids) expect(alive(pid), `proxy ${pid} still runs`).toBe(false);
    expect(result.facts['proxies that did not exit on SIGTERM (killed)']).toBe(0);
    const headers = { 'X-Svc-Token': ROOT };
    const services = (await (await fetch(`${agent.url}/v1/agent/services`, { headers })).json()) as object;
    expect(Object.keys(services).filter((id) => id.startsWith(result.prefix))).toEqual([]);
    const intentions = (await (await fetch(`${agent.url}/v1/connect/intentions`, { headers })).json()) as {
      SourceName: string;
    }[];
    expect(intentions.filter((i) => i.SourceName.startsWith(result.prefix))).toEqual([]);
    return result;
  };

  it('new connections under an allow: every one served and echoed by the application', async () => {
    const r = await mesh('allow', '-rate', '20/s', '-duration', '2s');
    expect(r).toMatchObject({ scenario: 'mesh', unit: 'connections/s' });
    expect(r.settings).toMatchObject({ mode: 'open', connectionMode: 'new', deny: false });
    expect(r.summary.askedRps).toBe(20);
    expect(r.summary.errors).toEqual({});
    expect(r.summary.outcomes.refused).toBeUndefined();
    const served = r.summary.outcomes.served!.requests;
    expect(served).toBeGreaterThan(0);
    expect(r.summary.ok).toBe(served);
    expect(r.facts['connections the echo application accepted']).toBe(served);
    expect(r.facts['refused by intention (sidecars)']).toBe(0);
    expect(r.facts['handshake failures (sidecars)']).toBe(0);
    expect(r.crossCheck).toBeNull();
  });

  it('-deny: every connection refused, the application seeing none', async () => {
    const r = await mesh('deny', '-rate', '20/s', '-duration', '1s', '-deny');
    expect(r.settings).toMatchObject({ connectionMode: 'new', deny: true });
    expect(r.summary.errors).toEqual({});
    expect(r.summary.outcomes.served).toBeUndefined();
    expect(r.summary.ok).toBe(0);
    expect(r.summary.outcomes.refused!.requests).toBeGreaterThan(0);
    expect(r.facts['connections the echo application accepted']).toBe(0);
    // Each refusal the client saw is the echo sidecar's deny, none a failed handshake.
    expect(r.facts['refused by intention (sidecars)']).toBe(r.summary.outcomes.refused!.requests);
    expect(r.facts['handshake failures (sidecars)']).toBe(0);
    expect(r.crossCheck).toBeNull();
  });

  it('-long: chunks echoed over held connections, closed loop, in bytes per second', async () => {
    const r = await mesh('long', '-long', '-connections', '4', '-chunk', '4096', '-duration', '1s');
    expect(r).toMatchObject({ unit: 'exchanges/s' });
    expect(r.settings).toMatchObject({ mode: 'closed', connectionMode: 'long' });
    expect(r.summary.errors).toEqual({});
    expect(r.summary.outcomes.served!.requests).toBeGreaterThan(0);
    expect(r.facts['echoed MB/s (each way)']).toBeGreaterThan(0);
  });

  it('-upstream: loads the listener given, starting and registering nothing', async () => {
    let accepted = 0;
    const echo = createServer((socket) => {
      accepted++;
      socket.pipe(socket);
    });
    echo.listen(0, '127.0.0.1');
    await once(echo, 'listening');
    const out = join(dir.path, 'given.json');
    const upstream = `127.0.0.1:${(echo.address() as AddressInfo).port}`;
    const run = await runCli(
      ['loadtest', 'mesh', '-upstream', upstream, '-warmup', '0s', '-duration', '1s', '-rate', '20/s', '-out', out],
      { SVC_HTTP_ADDR: `127.0.0.1:${agent.port}`, SVC_HTTP_TOKEN: ROOT },
      60_000,
    );
    echo.close();
    expect(run.code, run.stderr).toBe(0);
    const r = JSON.parse(await readFile(out, 'utf8')) as Result;
    expect(r.settings).toMatchObject({ upstream, proxyPids: [] });
    expect(r.facts['proxies started']).toBe(0);
    expect(r.facts['refused by intention (sidecars)']).toBeNull();
    expect(r.summary.errors).toEqual({});
    expect(r.summary.outcomes.served!.requests).toBe(accepted);
    expect(accepted).toBeGreaterThan(0);
    expect(r.crossCheck).toBeNull();
  });
});
