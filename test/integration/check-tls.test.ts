// HTTP checks verify TLS against the agent's own CA (tls.defaults.ca_file), as Consul's
// OutgoingTLSConfigForCheck does: a service whose certificate the operator's private CA signed
// passes without TLSSkipVerify. The wait is for the agent's own status-change log line.
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
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
    await agent.stop();
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
});
