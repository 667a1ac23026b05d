// Debian's python3-consul (test/integration/support/python-consul-admin.py, the script of
// test/integration/python-consul-admin.test.ts) administering a cluster through its client agent
// (servers a and b, client c, on a 3-member etcd, ACLs on): every write goes through c, forwarded to
// a server, and each change is read back through a and b once their views hold it (blocking reads,
// no sleeps): a role linking a policy grants on every agent until the role drops it; a login token
// made through c is used on a and gone everywhere after logout, a wrong-audience JWT makes none; config
// entries and the intentions of a service-intentions entry appear and go on every agent; a snapshot
// saved through server a (a client agent refuses a save) and restored through c is what every agent
// reads, and a truncated one is refused with nothing changed.
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, tempDir, type AgentProcess } from '../integration/support/agent-process.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';

const run = promisify(execFile);
const ENSURE = resolve(import.meta.dirname, '../../scripts/ensure-python-consul.sh');
const PROGRAM = resolve(import.meta.dirname, '../integration/support/python-consul-admin.py');
const ROOT = 'b1a5ad0c-0000-4000-8000-00000000cc44';
const PREFIX = `/svc-py-admin-${process.pid}/`;

type Step = Record<string, unknown>;
/** The script's `linked` step (roles-link) and `login` step (login): the IDs the later phases take. */
type Linked = Step & { policy_id: string; role_id: string; accessor: string; secret: string };
type LoggedIn = Step & { accessor: string; secret: string };

let etcd: EtcdCluster;
let agents: AgentProcess[] = [];

/** One agent of the mesh with ACLs on (default deny) and the header brand a Consul library reads. */
function startAclAgent(name: string, server: boolean): Promise<AgentProcess> {
  return startAgent({
    config: {
      node_name: name,
      http_config: { header_brand: 'Consul' },
      acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: ROOT } },
      cluster: { etcd: { prefix: PREFIX }, member_ttl: '3s' },
    },
    args: [...etcd.endpoints.flatMap((url) => ['-etcd', url]), ...(server ? ['-server'] : [])],
  });
}

/** Runs one phase of the script against `agent` with `token`; its steps by name. */
async function phase(agent: AgentProcess, token: string, name: string, ...args: string[]): Promise<Map<string, Step>> {
  const python = (await run(ENSURE, [])).stdout.trim();
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(CONSUL|SVC)_/.test(key)));
  const { stdout } = await run(python, [PROGRAM, String(agent.port), token, name, ...args], { env });
  const steps = new Map<string, Step>();
  for (const line of stdout.trim().split('\n')) {
    const { step, ...result } = JSON.parse(line) as { step: string } & Step;
    steps.set(step, result);
  }
  return steps;
}

interface Answer {
  status: number;
  index: number;
  text: string;
}

async function call(agent: AgentProcess, method: string, path: string, body?: string, token = ROOT): Promise<Answer> {
  const res = await fetch(`${agent.url}${path}`, {
    method,
    headers: { 'X-Consul-Token': token },
    ...(body === undefined ? {} : { body }),
  });
  return { status: res.status, index: Number(res.headers.get('X-Consul-Index') ?? 0), text: await res.text() };
}

/** Blocking reads of `path` on `agent` until `done` accepts the answer (the agent's view holds the change). */
async function seen(agent: AgentProcess, path: string, done: (answer: Answer) => boolean): Promise<Answer> {
  let index = 0;
  for (;;) {
    const answer = await call(agent, 'GET', `${path}${path.includes('?') ? '&' : '?'}index=${index}&wait=5s`);
    if (done(answer)) return answer;
    index = answer.index;
  }
}

const onServers = (path: string, done: (answer: Answer) => boolean): Promise<Answer[]> =>
  Promise.all(agents.slice(0, 2).map((agent) => seen(agent, path, done)));

beforeAll(async () => {
  etcd = await startEtcdCluster({ size: 3 });
  const a = await startAclAgent('agent-a', true);
  agents = [a];
  const [b, c] = await Promise.all([startAclAgent('agent-b', true), startAclAgent('agent-c', false)]);
  agents = [a, b, c];
}, 120_000);
afterAll(async () => {
  await Promise.all(agents.map((agent) => agent.stop('SIGKILL')));
  await etcd?.stop();
});

describe('python3-consul administering a cluster through its client agent', () => {
  it(
    'a role made through c grants on a and b until, dropped through c, it grants nothing',
    { timeout: 120_000 },
    async () => {
      const c = agents[2]!;
      const linked = await phase(c, ROOT, 'roles-link');
      const { role_id, accessor, secret } = linked.get('linked') as Linked;
      expect(linked.get('kv')).toMatchObject({
        allowed: true,
        refused: { refused: 'ACLPermissionDenied' },
        read: 'v1',
      });
      await onServers(`/v1/acl/token/${accessor}`, (answer) => answer.status === 200);
      await onServers(`/v1/acl/role/${role_id}`, (answer) => answer.status === 200);
      for (const agent of agents.slice(0, 2)) {
        expect((await call(agent, 'PUT', '/v1/kv/app/from-server', 'v', secret)).status).toBe(200);
        expect((await call(agent, 'PUT', '/v1/kv/ops/from-server', 'v', secret)).status).toBe(403);
      }

      const dropped = await phase(c, ROOT, 'roles-drop', role_id, secret);
      // Through c itself the next request after the edit is refused.
      expect(dropped.get('refused')).toMatchObject({
        write: { refused: 'ACLPermissionDenied' },
        read: { refused: 'ACLPermissionDenied' },
      });
      expect(dropped.get('deleted')).toEqual({ deleted: true, read: { refused: 'NotFound', text: '' } });
      await onServers(`/v1/acl/role/${role_id}`, (answer) => answer.status === 404);
      for (const agent of agents)
        expect((await call(agent, 'PUT', '/v1/kv/app/from-server', 'v2', secret)).status).toBe(403);
    },
  );

  it(
    'a login through c is a token a and b honour; logout through c ends it everywhere',
    { timeout: 120_000 },
    async () => {
      const [a, , c] = agents as [AgentProcess, AgentProcess, AgentProcess];
      const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const pem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
      const jwt = (audience: string) =>
        new SignJWT({ service: 'web' })
          .setProtectedHeader({ alg: 'ES256' })
          .setIssuer('https://ci.example')
          .setAudience(audience)
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(privateKey);
      expect((await phase(c, ROOT, 'login-setup', pem)).get('method')).toMatchObject({ name: 'py-jwt', keys: 1 });
      const count = async () => (JSON.parse((await call(a, 'GET', '/v1/acl/tokens')).text) as unknown[]).length;
      const before = await count();

      const login = await phase(c, '', 'login', await jwt('svc-agent'), await jwt('someone-else'));
      const { accessor, secret } = login.get('login') as LoggedIn;
      expect(login.get('login')).toMatchObject({ method: 'py-jwt', identities: [{ ServiceName: 'web' }] });
      expect(login.get('use')).toMatchObject({ own: true, other: { refused: 'ACLPermissionDenied' } });
      expect(login.get('wrong_audience')).toEqual({
        answer: {
          refused: 'ACLPermissionDenied',
          text: 'error validating claims: aud claim does not match any bound audience',
        },
      });
      await onServers(`/v1/acl/token/${accessor}`, (answer) => answer.status === 200);
      expect(await count()).toBe(before + 1);
      const register = (agent: AgentProcess, name: string) =>
        call(agent, 'PUT', '/v1/agent/service/register', JSON.stringify({ Name: name, Port: 8080 }), secret);
      expect((await register(a, 'web')).status).toBe(200);
      expect((await register(a, 'db')).status).toBe(403);

      const logout = await phase(c, '', 'logout', secret);
      expect(logout.get('logout')).toMatchObject({
        out: true,
        after: { refused: 'ACLPermissionDenied', text: 'ACL not found' },
      });
      await onServers(`/v1/acl/token/${accessor}`, (answer) => answer.status !== 200);
      expect(await register(a, 'web')).toMatchObject({ status: 403, text: 'ACL not found' });
      expect(await count()).toBe(before);
    },
  );

  it(
    'config entries written through c are read on a and b; deleted with ?cas through c, gone from both',
    { timeout: 120_000 },
    async () => {
      const c = agents[2]!;
      expect((await phase(c, ROOT, 'config')).get('config')).toMatchObject({ written: [true, true, true] });
      const pairs = (answer: Answer) =>
        (JSON.parse(answer.text) as { SourceName: string; DestinationName: string; Action: string }[])
          .filter((i) => i.DestinationName === 'py-db')
          .map((i) => `${i.SourceName}:${i.Action}`);
      for (const answer of await onServers('/v1/connect/intentions', (answer) => pairs(answer).length === 2))
        expect(pairs(answer)).toEqual(['py-web:allow', '*:deny']);
      for (const answer of await onServers('/v1/config/service-defaults/py-web', (answer) => answer.status === 200))
        expect(JSON.parse(answer.text)).toMatchObject({ Kind: 'service-defaults', Name: 'py-web', Protocol: 'http' });

      const deleted = (await phase(c, ROOT, 'config-delete')).get('deleted') as { gone: Record<string, unknown[]> };
      for (const kind of ['service-defaults', 'service-intentions'])
        expect(deleted.gone[kind]?.slice(0, 3)).toEqual([false, true, true]);
      await onServers('/v1/connect/intentions', (answer) => pairs(answer).length === 0);
      await onServers('/v1/config/service-defaults/py-web', (answer) => answer.status === 404);
    },
  );

  it(
    'a snapshot saved through a and restored through c is what every agent reads; a truncated one changes nothing',
    { timeout: 120_000 },
    async () => {
      const [a, , c] = agents as [AgentProcess, AgentProcess, AgentProcess];
      const dir = await tempDir('svc-py-admin-cluster-');
      try {
        const file = `${dir.path}/py.snap`;
        const round = await phase(c, ROOT, 'snapshot-round', file, String(a.port));
        expect(round.get('saved')).toMatchObject({ gzip: true, type: 'application/x-gzip' });
        expect(round.get('restored')).toEqual({
          ok: true,
          values: { 'snap/a': 'saved', 'snap/b': 'kept', 'snap/new': null, 'snap/many/7': null },
        });
        const value = (answer: Answer) =>
          answer.status === 200
            ? Buffer.from((JSON.parse(answer.text) as { Value: string }[])[0]?.Value ?? '', 'base64').toString()
            : null;
        for (const key of ['snap/a', 'snap/b', 'snap/new']) {
          const want = { 'snap/a': 'saved', 'snap/b': 'kept', 'snap/new': null }[key];
          await Promise.all(agents.map((agent) => seen(agent, `/v1/kv/${key}`, (answer) => value(answer) === want)));
        }

        const entries = () =>
          Promise.all(agents.map(async (agent) => (await call(agent, 'GET', '/v1/kv/snap/?recurse')).text));
        const before = await entries();
        const truncated = (await phase(c, ROOT, 'snapshot-truncated', file)).get('truncated') as {
          answer: { refused: string; text: string };
          value: string;
        };
        expect(truncated.answer.refused).toBe('ConsulException');
        expect(truncated.answer.text).toMatch(/^500 failed to decompress snapshot: /);
        // Every agent's entries, indexes and all, are the ones before the refused restore.
        expect(await entries()).toEqual(before);
      } finally {
        await dir.remove();
      }
    },
  );
});
