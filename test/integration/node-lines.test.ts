// The agent on the Node lines after 20, where the uWS package has no native binary: it serves with
// node:http (docs/decisions.md D18), signs leaves in its worker threads, wakes blocking queries and
// stops cleanly. The Node builds come from the npm registry (scripts/ensure-node.sh).
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { startAgent } from './support/agent-process.js';

const ENSURE = resolve(import.meta.dirname, '../../scripts/ensure-node.sh');
const linuxX64 = process.platform === 'linux' && process.arch === 'x64';

async function nodeBinary(version: string): Promise<string> {
  const { stdout } = await promisify(execFile)(ENSURE, [version], { encoding: 'utf8', timeout: 120_000 });
  return stdout.trim();
}

describe.runIf(linuxX64).each(['22.23.3', '24.9.0'])('Node %s', (version) => {
  it('serves the API with node:http, signs leaves, wakes a blocking query and stops with exit 0', { timeout: 150_000 }, async () => {
    const node = await nodeBinary(version);
    const agent = await startAgent({ node });
    try {
      const line = agent.logs.find((l) => l.msg === 'svc-agent started');
      expect(line).toMatchObject({ transport: 'node' });
      // Asked for uWS (the uws-transport project), an agent on a Node line without its binary says why it serves with node:http.
      if (process.env.SVC_TEST_TRANSPORT === 'uws') expect(String(line?.transportReason)).toContain(`no native uWebSockets.js binary for Node ${version}`);
      expect(await (await fetch(`${agent.url}/v1/kv/k`, { method: 'PUT', body: 'v' })).text()).toBe('true');
      const index = Number((await fetch(`${agent.url}/v1/kv/k`)).headers.get('x-svc-index'));
      const parked = fetch(`${agent.url}/v1/kv/k?index=${index}&wait=30s&raw`);
      await fetch(`${agent.url}/v1/kv/k`, { method: 'PUT', body: 'w' });
      expect(await (await parked).text()).toBe('w');
      const authorize = await fetch(`${agent.url}/v1/agent/connect/authorize`, { method: 'POST', body: JSON.stringify({ Target: 'db', ClientCertURI: 'spiffe://x.consul/ns/default/dc/dc1/svc/web' }) });
      expect(await authorize.json()).toMatchObject({ Authorized: true });
      const leaf = (await (await fetch(`${agent.url}/v1/agent/connect/ca/leaf/web`)).json()) as { Service: string; CertPEM: string };
      expect(leaf.Service).toBe('web');
      expect(leaf.CertPEM).toContain('BEGIN CERTIFICATE');
    } finally {
      expect(await agent.stop()).toBe(0);
    }
  });
});
