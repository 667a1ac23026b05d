// The HTTP conventions (docs/decisions.md#http-conventions), against the real agent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { get, rawRequest, request, serverClosesAfter } from './support/raw-http.js';

describe('HTTP conventions (brand Svc, translate on)', () => {
  let agent: AgentProcess;
  beforeAll(async () => {
    agent = await startAgent({ config: { translate_wan_addrs: true, acl: { default_policy: 'deny' } } });
    await fetch(`${agent.url}/v1/kv/conv/a`, { method: 'PUT', body: 'x<y>&z' });
  });
  afterAll(() => agent.stop());

  it('answers minimized JSON with no trailing newline by default', async () => {
    const res = await fetch(`${agent.url}/v1/kv/conv/a`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const text = await res.text();
    expect(text.startsWith('[{"LockIndex":0,"Key":"conv/a","Flags":0,"Value":')).toBe(true);
    expect(text.endsWith('}]')).toBe(true);
  });

  it('answers 4-space indented JSON with one trailing newline for ?pretty, any value', async () => {
    for (const q of ['pretty', 'pretty=', 'pretty=1', 'pretty=false']) {
      const text = await (await fetch(`${agent.url}/v1/kv/conv/a?${q}`)).text();
      expect(text).toMatch(/^\[\n {4}\{\n {8}"LockIndex": 0,\n {8}"Key": "conv\/a",/);
      expect(text.endsWith('}\n]\n')).toBe(true);
    }
  });

  it('sends the default ACL policy header on every response, errors and 404s included', async () => {
    for (const [method, path] of [
      ['GET', '/v1/kv/conv/a'],
      ['GET', '/v1/kv/missing'],
      ['PATCH', '/v1/kv/conv/a'],
      ['GET', '/v1/unknown'],
      ['GET', '/nope'],
      ['OPTIONS', '/v1/agent/self'],
      ['GET', '/v1/kv/x?index=abc'],
    ] as const) {
      const res = await fetch(`${agent.url}${path}`, { method });
      expect(res.headers.get('x-svc-default-acl-policy'), `${method} ${path}`).toBe('deny');
      expect(res.headers.get('x-svc-translate-addresses'), `${method} ${path}`).toBe('true');
    }
  });

  it('answers an unknown path with a plain-text 404', async () => {
    let res = await fetch(`${agent.url}/v1/nothing/here`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(await res.text()).toBe('Invalid URL path: not a recognized HTTP API endpoint\n');
    res = await fetch(`${agent.url}/kv/foo`);
    expect(res.status).toBe(404);
    expect(await res.text()).toBe(
      "Invalid URL path: if attempting to use the HTTP API, ensure the path starts with '/v1/'\n",
    );
  });

  it('answers a wrong method with 405, Allow and `method X not allowed`', async () => {
    const res = await fetch(`${agent.url}/v1/agent/members`, { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('OPTIONS,GET');
    expect(await res.text()).toBe('method DELETE not allowed');
    const kv = await fetch(`${agent.url}/v1/kv/a`, { method: 'POST', body: '' });
    expect(kv.status).toBe(405);
    expect(kv.headers.get('allow')).toBe('OPTIONS,GET,PUT,DELETE');
  });

  it('answers OPTIONS with 200, Allow and no body', async () => {
    const res = await fetch(`${agent.url}/v1/kv/anything`, { method: 'OPTIONS' });
    expect(res.status).toBe(200);
    expect(res.headers.get('allow')).toBe('OPTIONS,GET,PUT,DELETE');
    expect(res.headers.get('content-type')).toBeNull();
    expect(await res.text()).toBe('');
  });

  it('redirects a subtree path without its slash, and unclean paths, like Go ServeMux', async () => {
    let res = await fetch(`${agent.url}/v1/kv`, { redirect: 'manual' });
    expect(res.status).toBe(301);
    expect(res.headers.get('location')).toBe('/v1/kv/');
    res = await rawRequest(agent.port, get('/v1//agent/self')).then(
      (r) => new Response(r.body, { status: r.status, headers: r.headers }),
    );
    expect(res.status).toBe(301);
    expect(res.headers.get('location')).toBe('/v1/agent/self');
  });

  it('answers a malformed percent-encoding in a path with 400', async () => {
    const res = await rawRequest(agent.port, get('/v1/kv/bad%zzkey'));
    expect(res.status).toBe(400);
    expect(res.body.toString()).toBe('Invalid URL path: malformed percent-encoding');
  });

  it('decodes percent-encoded KV keys', async () => {
    await fetch(`${agent.url}/v1/kv/conv/with%20space`, { method: 'PUT', body: 'v' });
    const [entry] = (await (await fetch(`${agent.url}/v1/kv/conv/with%20space`)).json()) as { Key: string }[];
    expect(entry?.Key).toBe('conv/with space');
  });

  it('escapes <, > and & in JSON strings as Go does', async () => {
    await fetch(`${agent.url}/v1/kv/conv/<html>&`, { method: 'PUT', body: 'v' });
    const text = await (await fetch(`${agent.url}/v1/kv/conv/?keys`)).text();
    expect(text).toContain('"conv/\\u003chtml\\u003e\\u0026"');
  });

  it('keeps a connection alive by default and closes it when the request says Connection: close', async () => {
    const keep = await serverClosesAfter(agent.port, get('/v1/status/leader'), 300);
    expect(keep.response.status).toBe(200);
    expect(keep.closedByServer).toBe(false);
    const close = await serverClosesAfter(agent.port, get('/v1/status/leader', { Connection: 'close' }), 2000);
    expect(close.response.status).toBe(200);
    expect(close.closedByServer).toBe(true);
  });

  it('caps request bodies: 413 with a message, by Content-Length or by bytes read', async () => {
    const big = 'x'.repeat(600 * 1024);
    const res = await fetch(`${agent.url}/v1/kv/conv/big`, { method: 'PUT', body: big });
    expect(res.status).toBe(413);
    expect(await res.text()).toBe(
      `Request body(${big.length} bytes) too large, max size: 524288 bytes. See https://developer.hashicorp.com/docs/agent/config/config-files#kv_max_value_size.`,
    );
    expect((await fetch(`${agent.url}/v1/kv/conv/big`)).status).toBe(404);
    // The agent still serves after refusing a body.
    expect((await fetch(`${agent.url}/v1/status/leader`)).status).toBe(200);
  });

  it('answers agent/self with the sections Consul clients read: Config.Version to gate on, Stats.consul, Stats.build', async () => {
    const self = (await (await fetch(`${agent.url}/v1/agent/self`)).json()) as Record<string, Record<string, unknown>>;
    expect(self.Config?.Version).toBe('1.17.0');
    expect(self.Meta).toEqual({ 'consul-network-segment': '', 'consul-version': '1.17.0' });
    const stats = self.Stats as Record<string, Record<string, string>>;
    expect(stats.consul).toEqual({
      acl: 'disabled',
      bootstrap: 'false',
      known_datacenters: '1',
      leader: 'true',
      leader_addr: '127.0.0.1:8300',
      server: 'true',
    });
    expect(stats.build).toMatchObject({
      version: '1.17.0',
      version_metadata: expect.stringMatching(/^svc-agent-\d+\.\d+\.\d+$/),
    });
    expect(Object.keys(stats)).toEqual(expect.arrayContaining(['agent', 'raft', 'runtime', 'build', 'consul']));
    expect(self).not.toHaveProperty('xDS');
  });

  it('names WAN members node.dc, as Consul does', async () => {
    const self = (await (await fetch(`${agent.url}/v1/agent/self`)).json()) as { Config: { NodeName: string } };
    const wan = (await (await fetch(`${agent.url}/v1/agent/members?wan=1`)).json()) as { Name: string }[];
    expect(wan.map((m) => m.Name)).toEqual([`${self.Config.NodeName}.dc1`]);
    const lan = (await (await fetch(`${agent.url}/v1/agent/members`)).json()) as { Name: string }[];
    expect(lan.map((m) => m.Name)).toEqual([self.Config.NodeName]);
  });

  it('serves agent basics', async () => {
    const self = (await (await fetch(`${agent.url}/v1/agent/self`)).json()) as Record<string, Record<string, unknown>>;
    expect(Object.keys(self)).toEqual(['Config', 'DebugConfig', 'Coord', 'Member', 'Stats', 'Meta']);
    expect(self.Config?.Datacenter).toBe('dc1');
    expect(self.Config?.Server).toBe(true);
    const members = (await (await fetch(`${agent.url}/v1/agent/members`)).json()) as Record<string, unknown>[];
    expect(members).toHaveLength(1);
    expect(members[0]?.Status).toBe(1);
    expect(members[0]?.Name).toBe(self.Config?.NodeName);
    expect(await (await fetch(`${agent.url}/v1/status/leader`)).json()).toBe('127.0.0.1:8300');
    expect(await (await fetch(`${agent.url}/v1/status/peers`)).json()).toEqual(['127.0.0.1:8300']);
  });

  it('never shows secrets in agent/self', async () => {
    const text = await (await fetch(`${agent.url}/v1/agent/self`)).text();
    expect(text).toContain(
      '"Tokens":{"InitialManagement":"hidden","Default":"hidden","Agent":"hidden","AgentRecovery":"hidden",' +
        '"Replication":"hidden","ConfigFileServiceRegistration":"hidden"}',
    );
  });

  it('keeps the ?token= value out of the logs', async () => {
    await fetch(`${agent.url}/v1/kv/conv/a?token=very-secret-token-value`);
    await fetch(`${agent.url}/v1/kv/x?index=bad&token=very-secret-token-value`);
    expect(JSON.stringify(agent.logs)).not.toContain('very-secret-token-value');
  });

  it('answers a raw request exactly (status line and header names)', async () => {
    const res = await rawRequest(agent.port, request('PUT', '/v1/kv/conv/raw', 'abc'));
    expect(res.status).toBe(200);
    expect(res.rawHeaders).toContain('X-Svc-Default-ACL-Policy');
    expect(res.body.toString()).toBe('true');
  });
});

describe('HTTP conventions (brand Consul, translate off)', () => {
  let agent: AgentProcess;
  beforeAll(async () => {
    agent = await startAgent({ config: { http_config: { header_brand: 'Consul' } } });
  });
  afterAll(() => agent.stop());

  it('emits X-Consul-* headers and no translate header', async () => {
    await fetch(`${agent.url}/v1/kv/b`, { method: 'PUT', body: '1' });
    const res = await fetch(`${agent.url}/v1/kv/b`);
    const [entry] = (await res.clone().json()) as [{ ModifyIndex: number }];
    expect(res.headers.get('x-consul-default-acl-policy')).toBe('allow');
    // The key's own index (the CA's bootstrap takes the store's first index).
    expect(res.headers.get('x-consul-index')).toBe(String(entry.ModifyIndex));
    expect(res.headers.get('x-consul-knownleader')).toBe('true');
    expect(res.headers.get('x-consul-lastcontact')).toBe('0');
    expect(res.headers.get('x-svc-index')).toBeNull();
    expect(res.headers.get('x-consul-translate-addresses')).toBeNull();
  });
});
