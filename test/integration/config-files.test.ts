// Config as Consul users write it, against the real agent: HCL beside JSON, -config-dir, a value
// error naming its file, any non-empty initial management secret, a data dir that cannot be, and a
// Consul server's own file (its other keys warned about, a typo refused with the key meant).
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, startAgent, tempDir } from './support/agent-process.js';

describe('config files', () => {
  let dir: { path: string; remove: () => Promise<void> };
  beforeAll(async () => {
    dir = await tempDir('svc-config-');
  });
  afterAll(() => dir.remove());

  it('starts from a -config-dir of HCL and JSON in lexical order, with a 32-hex-digit management secret', async () => {
    const conf = join(dir.path, 'conf.d');
    await mkdir(conf);
    const secret = '0123456789abcdef0123456789abcdef';
    await writeFile(
      join(conf, '10-acl.hcl'),
      `acl {\n  enabled = true\n  default_policy = "deny"\n  tokens {\n    initial_management = "${secret}"\n  }\n}\nnode_name = "from-hcl"\n`,
    );
    await writeFile(join(conf, '20-node.json'), JSON.stringify({ node_name: 'from-json' }));
    await writeFile(join(conf, 'notes.txt'), 'ignored');
    const agent = await startAgent({ args: ['-config-dir', conf] });
    try {
      expect(agent.logs.find((l) => l.msg === 'svc-agent started')).toMatchObject({ node: 'from-json' });
      expect((await fetch(`${agent.url}/v1/kv/x`)).status).toBe(403);
      const self = await fetch(`${agent.url}/v1/acl/token/self`, { headers: { 'X-Svc-Token': secret } });
      expect(self.status).toBe(200);
      expect(((await self.json()) as { Policies: { Name: string }[] }).Policies[0]?.Name).toBe('global-management');
    } finally {
      await agent.stop();
    }
  });

  it('writes its log lines to -log-file as well, and rotates it by size', async () => {
    const file = join(dir.path, 'agent.log');
    const agent = await startAgent({ args: ['-log-file', file, '-log-rotate-bytes', '400', '-log-level', 'debug'] });
    try {
      for (let i = 0; i < 5; i++) await fetch(`${agent.url}/v1/status/leader`);
      await agent.waitForLog((l) => l.msg === 'Request finished');
    } finally {
      await agent.stop();
    }
    const { readFile, readdir } = await import('node:fs/promises');
    const all = (await readdir(dir.path)).filter((n) => /^agent(-\d+)?\.log$/.test(n));
    expect(all.length).toBeGreaterThan(1);
    const text = (await Promise.all(all.map((n) => readFile(join(dir.path, n), 'utf8')))).join('');
    expect(text).toContain('"msg":"svc-agent started"');
    expect(text).toContain('"msg":"Request finished"');
  });

  it('names the file a bad value came from', async () => {
    const file = join(dir.path, 'bad.hcl');
    await writeFile(file, 'ports {\n  http = 70000\n}\n');
    const out = await runCli(['agent', '-dev', '-config-file', file]);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain(`${file}: ports.http: expected an integer from -1 to 65535, got 70000`);
  });

  it('refuses a data dir that cannot be made, at once, naming it', async () => {
    const out = await runCli(['agent', '-data-dir', '/proc/svc-agent-test', '-http-port', '0']);
    expect(out.code).toBe(1);
    expect(out.stderr).toContain('cannot create directory /proc/svc-agent-test: /proc does not take new directories');
  });

  it("starts from a Consul server's config file, warning once per ignored key at start and on reload", async () => {
    const data = join(dir.path, 'consul-data');
    const file = join(dir.path, 'consul.hcl');
    await writeFile(file, CONSUL_SERVER_HCL.replace('DATA_DIR', data));
    const agent = await startAgent({ dataDir: data, args: ['-config-file', file] });
    try {
      const started = agent.logs.find((l) => l.msg === 'svc-agent started');
      expect(started).toMatchObject({ node: 'consul-server-1', datacenter: 'east-1', dataDir: data });
      const ignoredAt = (from: number): string[] =>
        agent.logs
          .slice(from)
          .filter(
            (l) =>
              l.level === 'warn' &&
              String(l.msg).endsWith(' is ignored: svc-agent does not implement this Consul setting'),
          )
          .map((l) =>
            String(l.msg).slice(
              file.length + 2,
              -' is ignored: svc-agent does not implement this Consul setting'.length,
            ),
          );
      const expected = [
        'bootstrap_expect',
        'ui_config',
        'retry_join',
        'ports.grpc',
        'ports.dns',
        'telemetry.disable_hostname',
        'performance',
        'encrypt',
        'leave_on_terminate',
      ];
      expect(ignoredAt(0).sort()).toEqual([...expected].sort());
      expect((await fetch(`${agent.url}/v1/kv/x`)).status).toBe(403); // acl.default_policy "deny" was read
      const from = agent.logs.length;
      agent.child.kill('SIGHUP');
      await agent.waitForLog((l) => l.msg === 'config reloaded', from);
      expect(ignoredAt(from).sort()).toEqual([...expected].sort());
    } finally {
      await agent.stop();
    }
  });

  it('refuses a key Consul does not have either, naming the file and the key meant', async () => {
    const file = join(dir.path, 'typo.hcl');
    await writeFile(file, 'datacentre = "east-1"\n');
    const out = await runCli(['agent', '-dev', '-http-port', '0', '-config-file', file]);
    expect(out.code).toBe(1);
    expect(out.stderr).toBe(`==> ${file}: invalid config key datacentre (did you mean datacenter?)\n`);
  });
});

/** A Consul server's file as operators write it; DATA_DIR is replaced by the test's directory. */
const CONSUL_SERVER_HCL = `
datacenter = "east-1"
data_dir = "DATA_DIR"
log_level = "INFO"
node_name = "consul-server-1"
server = true
bootstrap_expect = 1
ui_config { enabled = true }
retry_join = ["127.0.0.1"]
bind_addr = "127.0.0.1"
client_addr = "127.0.0.1"
ports { grpc = 8502, dns = 8600 }
connect {
  enabled = true
}
acl {
  enabled = true
  default_policy = "deny"
  tokens {
    initial_management = "5e2a4c1b-7d3f-4a6e-9b8c-0d1e2f3a4b5c"
  }
}
telemetry { disable_hostname = true, prometheus_retention_time = "60s" }
performance {
  raft_multiplier = 1
}
encrypt = "pUqJrVyVRj5jsiYEkM/tFQYfWyJIv4s3XkvDwy7Cu5s="
verify_incoming = false
leave_on_terminate = true
services {
  name = "web"
  port = 8080
}
`;
