// HTTP checks verify TLS against the agent's own CA (tls.defaults.ca_file), as Consul's
// OutgoingTLSConfigForCheck does: a service whose certificate the operator's private CA signed
// passes without TLSSkipVerify, and a reload reads the CA file again. The wait is for the agent's
// own status-change log line.
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTlsFiles, type TlsFiles } from '../support/tls-files.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';

describe("checks and the agent's CA", () => {
  let tls: TlsFiles;
  let server: Server;
  let port: number;
  let agent: AgentProcess;
  beforeAll(async () => {
    tls = await makeTlsFiles();
    const [cert, key] = await Promise.all([readFile(tls.certFile), readFile(tls.keyFile)]);
    server = createServer({ cert, key }, (_req, res) => res.end('secure'));
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    port = (server.address() as AddressInfo).port;
    agent = await startAgent({ config: { tls: { defaults: { ca_file: tls.caFile } } } });
  });
  afterAll(async () => {
    await agent?.stop();
    await new Promise((done) => server.close(done));
    await tls.remove();
  });

  it("passes an HTTPS check whose certificate the agent's CA signed, without TLSSkipVerify", async () => {
    const target = `https://localhost:${port}/`;
    const passed = agent.waitForLog(
      (l) => l.msg === 'check status changed' && l.checkId === 'tls-ok' && l.status === 'passing',
    );
    const res = await fetch(`${agent.url}/v1/agent/check/register`, {
      method: 'PUT',
      body: JSON.stringify({ ID: 'tls-ok', Name: 'tls', HTTP: target, Interval: '200ms' }),
    });
    expect(res.status).toBe(200);
    await passed;
    const checks = (await (await fetch(`${agent.url}/v1/agent/checks`)).json()) as Record<string, { Output: string }>;
    expect(checks['tls-ok']?.Output).toBe(`HTTP GET ${target}: 200 OK Output: secure`);
  });

  it('verifies against the CA file as a reload finds it, the same path with a new CA in it', async () => {
    const other = await makeTlsFiles();
    const dir = await mkdtemp(join(tmpdir(), 'svc-check-ca-'));
    const caFile = join(dir, 'ca.pem');
    await copyFile(other.caFile, caFile);
    const reloading = await startAgent({ config: { tls: { defaults: { ca_file: caFile } } } });
    try {
      const target = `https://localhost:${port}/`;
      const output = async (): Promise<string> => {
        const checks = (await (await fetch(`${reloading.url}/v1/agent/checks`)).json()) as Record<
          string,
          { Output: string; Status: string }
        >;
        return checks['tls-reload']?.Output ?? '';
      };
      const register = await fetch(`${reloading.url}/v1/agent/check/register`, {
        method: 'PUT',
        body: JSON.stringify({ ID: 'tls-reload', Name: 'tls', HTTP: target, Interval: '200ms' }),
      });
      expect(register.status).toBe(200);
      // The first run's output, against the other CA: not trusted.
      while ((await output()) === '') await new Promise((r) => setTimeout(r, 50));
      // Go's words, as Consul's check says it.
      expect(await output()).toBe(
        `Get "${target}": tls: failed to verify certificate: x509: certificate signed by unknown authority`,
      );
      const passed = reloading.waitForLog(
        (l) => l.msg === 'check status changed' && l.checkId === 'tls-reload' && l.status === 'passing',
      );
      await copyFile(tls.caFile, caFile);
      const reload = await fetch(`${reloading.url}/v1/agent/reload`, { method: 'PUT' });
      expect(reload.status).toBe(200);
      await passed;
      expect(await output()).toBe(`HTTP GET ${target}: 200 OK Output: secure`);
    } finally {
      await reloading.stop();
      await rm(dir, { recursive: true, force: true });
      await other.remove();
    }
  });
});
