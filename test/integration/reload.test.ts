// Reload against the real agent: SIGHUP (as systemd's ExecReload sends it) and PUT /v1/agent/reload
// re-read the config files, apply what can change at run time, name what needs a restart, keep the
// running config when a file is bad, and swap the HTTPS certificate for new connections.
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { makeTlsFiles, type TlsFiles } from '../support/tls-files.js';

const MGMT = '4c0e7c58-5a88-4b3d-9d55-7d0c3f1e2a61';

describe('reload', () => {
  let dir: string;
  let file: string;
  let agent: AgentProcess;
  const write = (config: Record<string, unknown>): Promise<void> => writeFile(file, JSON.stringify(config));
  const base = {
    acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MGMT } },
    limits: { http_max_body_bytes: 600_000, kv_max_value_size: 600_000 },
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-reload-'));
    file = join(dir, 'agent.json');
    await write(base);
    agent = await startAgent({ args: ['-config-file', file] });
  });
  afterAll(async () => {
    await agent.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const reloaded = (from: number): Promise<Record<string, unknown>> =>
    agent.waitForLog(
      (l) => l.msg === 'config reloaded' || l.msg === 'config reload failed; the running config stays',
      from,
    );

  it('on SIGHUP applies the log level and limits, names what needs a restart, and keeps serving', async () => {
    const big = 'x'.repeat(100_000);
    const auth = { 'X-Svc-Token': MGMT };
    expect((await fetch(`${agent.url}/v1/kv/big`, { method: 'PUT', body: big, headers: auth })).status).toBe(200);
    await write({
      ...base,
      log_level: 'debug',
      datacenter: 'elsewhere',
      limits: { http_max_body_bytes: 50_000, kv_max_value_size: 50_000 },
    });
    const from = agent.logs.length;
    agent.child.kill('SIGHUP');
    const line = await reloaded(from);
    expect(line).toMatchObject({
      msg: 'config reloaded',
      applied: ['log_level', 'limits.http_max_body_bytes', 'limits.kv_max_value_size'],
      restartNeeded: ['datacenter'],
    });
    expect(agent.child.exitCode).toBeNull();
    // The smaller cap is in force, and debug lines now name each request (the token hidden).
    expect((await fetch(`${agent.url}/v1/kv/big`, { method: 'PUT', body: big, headers: auth })).status).toBe(413);
    await fetch(`${agent.url}/v1/kv/big?token=${MGMT}`);
    const request = await agent.waitForLog(
      (l) => l.msg === 'Request finished' && String(l.url).startsWith('/v1/kv/big?'),
      from,
    );
    expect(request).toMatchObject({
      level: 'debug',
      component: 'agent.http',
      method: 'GET',
      url: '/v1/kv/big?token=<hidden>',
      status: 200,
    });
    expect(JSON.stringify(agent.logs)).not.toContain(MGMT);
    // The running config is the new one, as agent/self shows.
    const self = (await (await fetch(`${agent.url}/v1/agent/self`, { headers: { 'X-Svc-Token': MGMT } })).json()) as {
      DebugConfig: Record<string, unknown>;
    };
    expect(self.DebugConfig.LogLevel).toBe('debug');
  });

  it('keeps the running config when the file is bad, on SIGHUP and on PUT /v1/agent/reload', async () => {
    await writeFile(file, '{ "log_level": ');
    const from = agent.logs.length;
    agent.child.kill('SIGHUP');
    expect(await reloaded(from)).toMatchObject({
      level: 'error',
      msg: 'config reload failed; the running config stays',
    });
    expect((await fetch(`${agent.url}/v1/status/leader`)).status).toBe(200);
    const res = await fetch(`${agent.url}/v1/agent/reload`, { method: 'PUT', headers: { 'X-Svc-Token': MGMT } });
    expect(res.status).toBe(500);
    expect(await res.text()).toMatch(/^Failed to reload configs: .*agent\.json/);
  });

  it('PUT /v1/agent/reload needs agent:write and applies a good file', async () => {
    await write({ ...base, node_name: 'renamed', log_level: 'info' });
    expect((await fetch(`${agent.url}/v1/agent/reload`, { method: 'PUT' })).status).toBe(403);
    const from = agent.logs.length;
    const res = await fetch(`${agent.url}/v1/agent/reload`, { method: 'PUT', headers: { 'X-Svc-Token': MGMT } });
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
    expect(await reloaded(from)).toMatchObject({
      applied: ['log_level', 'limits.http_max_body_bytes', 'limits.kv_max_value_size'],
      restartNeeded: ['node_name'],
    });
  });
});

describe('reload of the HTTPS certificate', () => {
  let files: TlsFiles;
  let agent: AgentProcess;
  let httpsPort: number;
  beforeAll(async () => {
    files = await makeTlsFiles();
    agent = await startAgent({
      args: ['-https-port', '0'],
      config: { tls: { defaults: { cert_file: files.certFile, key_file: files.keyFile } } },
    });
    httpsPort = Number(
      String(agent.logs.find((l) => l.msg === 'svc-agent started')?.httpsAddress)
        .split(':')
        .pop(),
    );
  });
  afterAll(async () => {
    await agent.stop();
    await files.remove();
  });

  const presented = (): Promise<string> =>
    new Promise((done, fail) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: httpsPort, ca: readFileSync(files.caFile) }, () => {
        done(String(socket.getPeerCertificate().subject.CN));
        socket.destroy();
      });
      socket.on('error', fail);
    });

  it('serves new connections with the certificate now in the same files', async () => {
    expect(await presented()).toBe('server.svc');
    await copyFile(files.nextCertFile, files.certFile);
    await copyFile(files.nextKeyFile, files.keyFile);
    const from = agent.logs.length;
    agent.child.kill('SIGHUP');
    expect(await agent.waitForLog((l) => l.msg === 'config reloaded', from)).toMatchObject({
      tlsReloaded: true,
      applied: [],
    });
    expect(await presented()).toBe('next.svc');
  });

  it('keeps the running certificate when the new files do not load', async () => {
    await writeFile(files.keyFile, 'not a key');
    const from = agent.logs.length;
    agent.child.kill('SIGHUP');
    expect(await agent.waitForLog((l) => String(l.msg).startsWith('config reload failed'), from)).toMatchObject({
      level: 'error',
    });
    expect(await presented()).toBe('next.svc');
  });
});
