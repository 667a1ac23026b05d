// The agent on each Node line this machine can run (official builds from the npm registry,
// scripts/ensure-node.sh): which transport serves by default and why (docs/decisions.md D18),
// what the start-up log, /v1/agent/self and `svc-agent info` say of it, and that the API, the
// signing workers and blocking queries work on it and it stops cleanly.
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { runCli, startAgent } from './support/agent-process.js';

const ENSURE = resolve(import.meta.dirname, '../../scripts/ensure-node.sh');
const linuxX64 = process.platform === 'linux' && process.arch === 'x64';
const glibc =
  (process.report.getReport() as { header: { glibcVersionRuntime?: string } }).header.glibcVersionRuntime ?? '0';
/** @based/uws 6.0.1's binaries for Node 24 and 25 need glibc 2.38; those for Node 20-23 need 2.27. */
const glibcAtLeast238 = Number(glibc.split('.')[1] ?? 0) >= 38 || Number(glibc.split('.')[0]) > 2;

async function nodeBinary(version: string): Promise<string> {
  if (version === process.versions.node) return process.execPath;
  const { stdout } = await promisify(execFile)(ENSURE, [version], { encoding: 'utf8', timeout: 120_000 });
  return stdout.trim();
}

/** The lines, each with the uWS release that serves it on this host, or undefined where its binary cannot load. */
const LINES: readonly (readonly [string, string | undefined])[] = [
  [process.versions.node.startsWith('20.') ? process.versions.node : '20.19.5', 'v20.51.0'],
  ['22.23.3', 'v20.51.0'],
  ['24.9.0', glibcAtLeast238 ? 'v20.56.0' : undefined],
];

describe.runIf(linuxX64).each(LINES)('Node %s', (version, upstream) => {
  const forced = process.env.SVC_TEST_TRANSPORT; // node:http when asked for by hand
  const serving = forced === 'node' || upstream === undefined ? 'node' : 'uws';

  it(
    `serves with ${serving}, says so in its log, /v1/agent/self and info, and runs the API and the signers`,
    { timeout: 150_000 },
    async () => {
      const node = await nodeBinary(version);
      const agent = await startAgent({ node });
      try {
        const line = agent.logs.find((l) => l.msg === 'svc-agent started');
        const uws = serving === 'uws' ? `@based/uws 6.0.1 (uWebSockets.js ${upstream})` : null;
        expect(line).toMatchObject({ transport: serving, uws });
        const warnings = agent.logs.filter((l) => l.level === 'warn').map((l) => String(l.msg));
        if (forced === undefined && upstream === undefined) {
          expect(line?.transportReason).toBe(
            `the uWebSockets.js v20.56.0 binary for Node ${version} does not load on this host (glibc ${glibc}, it needs 2.38)`,
          );
          expect(warnings).toEqual([
            expect.stringMatching(
              new RegExp(
                `^the uWebSockets\\.js v20\\.56\\.0 binary for Node ${version} does not load on this host \\(glibc ${glibc}, it needs 2\\.38\\): serving with node:http.*; run Node 20 or 22, .* or a distribution with glibc 2\\.38 or newer`,
              ),
            ),
          ]);
        } else {
          expect(line?.transportReason).toBe(forced === 'node' ? 'configured' : 'loopback address');
          expect(warnings).toEqual([]);
        }
        const self = (await (await fetch(`${agent.url}/v1/agent/self`)).json()) as {
          Stats: Record<string, Record<string, string>>;
        };
        expect(self.Stats.transport).toEqual({ name: serving, reason: line?.transportReason, uws: uws ?? '' });
        const info = await runCli(['info', '-http-addr', `127.0.0.1:${agent.port}`]);
        expect(info.stdout).toContain(
          `transport:\n\tname = ${serving}\n\treason = ${String(line?.transportReason)}\n\tuws = ${uws ?? ''}\n`,
        );

        expect(await (await fetch(`${agent.url}/v1/kv/k`, { method: 'PUT', body: 'v' })).text()).toBe('true');
        const index = Number((await fetch(`${agent.url}/v1/kv/k`)).headers.get('x-svc-index'));
        const parked = fetch(`${agent.url}/v1/kv/k?index=${index}&wait=30s&raw`);
        await fetch(`${agent.url}/v1/kv/k`, { method: 'PUT', body: 'w' });
        expect(await (await parked).text()).toBe('w');
        const authorize = await fetch(`${agent.url}/v1/agent/connect/authorize`, {
          method: 'POST',
          body: JSON.stringify({ Target: 'db', ClientCertURI: 'spiffe://x.consul/ns/default/dc/dc1/svc/web' }),
        });
        expect(await authorize.json()).toMatchObject({ Authorized: true });
        const leaf = (await (await fetch(`${agent.url}/v1/agent/connect/ca/leaf/web`)).json()) as {
          Service: string;
          CertPEM: string;
        };
        expect(leaf.Service).toBe('web');
        expect(leaf.CertPEM).toContain('BEGIN CERTIFICATE');
      } finally {
        expect(await agent.stop()).toBe(0);
      }
    },
  );
});
