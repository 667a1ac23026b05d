// Every row at its size limits (docs/decisions.md#size-limits), and the mesh still starts: on a
// 3-member etcd with RBAC as docs/cluster-security.md sets it up, two server agents and a client
// agent, in process, one write API each fills a table with rows at every limit of its fields until
// the table holds well over gRPC's 4 MiB receive limit (ACL policies, tokens, intentions, catalog
// nodes, services and checks, KV, and the CA configuration). Then every agent restarts, each comes
// up (it reads the view from etcd in pages), and each lists every row of every table intact.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgent, type Agent } from '../../src/agent/index.js';
import {
  DATACENTER_MAX,
  DESCRIPTION_MAX,
  IDENTITY_DATACENTERS_MAX,
  POLICY_DATACENTERS_MAX,
  RULES_MAX,
  TOKEN_LINKS_MAX,
} from '../../src/acl/limits.js';
import {
  ADDRESS_MAX,
  CHECK_NAME_MAX,
  DEFINITION_MAX_JSON,
  META,
  NAME_MAX,
  NOTES_MAX,
  OUTPUT_MAX,
  PROXY_MAX_JSON,
  TAGGED_ADDRESSES,
  TAG_MAX,
  TAGS_MAX,
} from '../../src/catalog/limits.js';
import { loadConfig } from '../../src/config/load.js';
import { CA_CONFIG_MAX_JSON } from '../../src/connect/ca/ca-config.js';
import {
  DESCRIPTION_MAX_LENGTH,
  META_KEY_MAX_LENGTH,
  META_MAX_PAIRS,
  META_VALUE_MAX_LENGTH,
  NAME_MAX_BYTES,
  PERMISSIONS_MAX_JSON,
} from '../../src/connect/intentions/validate.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { clientUser, enableDocumentedRbac, findEtcdctl } from '../support/etcd-rbac.js';

const PREFIX = '/svc/';
const MANAGEMENT = '7c6b5a49-3827-4165-a4b3-c2d1e0f9a8b7';
const CLIENT = 'client-1';
const KV_MAX = 512 * 1024;
/** Each table's rows add up to at least this: gRPC's 4 MiB receive limit, and half as much again. */
const TABLE_BYTES = 6 * 1024 * 1024;

let etcd: EtcdCluster;
const running = new Map<string, Agent>();
const urls = new Map<string, string>();
const AGENTS: readonly [name: string, server: boolean][] = [
  ['server-1', true],
  ['server-2', true],
  [CLIENT, false],
];

async function start(name: string, server: boolean): Promise<void> {
  const user = server ? 'svc-server-1' : clientUser(name);
  const flags = {
    ports: { http: 0 },
    client_addr: '127.0.0.1',
    node_name: name,
    server,
    acl: {
      enabled: true,
      default_policy: 'deny' as const,
      tokens: server ? { initial_management: MANAGEMENT } : {},
    },
    cluster: { etcd: { endpoints: etcd.endpoints, prefix: PREFIX, username: user, password: `${user}-pw` } },
  };
  const agent = await createAgent(loadConfig({ files: [], flags, dev: true }));
  running.set(name, agent);
  urls.set(name, `http://127.0.0.1:${await agent.listen()}`);
}

async function startAll(): Promise<void> {
  // The first server alone: it creates the CA.
  await start('server-1', true);
  await Promise.all(AGENTS.slice(1).map(([name, server]) => start(name, server)));
}

async function stopAll(): Promise<void> {
  await Promise.all([...running.values()].map((agent) => agent.close()));
  running.clear();
  urls.clear();
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** One call with the management token; a 409 (another agent's ACL write raced it: "retry the request") is sent again. */
async function call(agent: string, method: string, path: string, body?: unknown): Promise<Json> {
  const url = urls.get(agent);
  if (url === undefined) throw new Error(`${agent} is not running`);
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: { 'X-Svc-Token': MANAGEMENT },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status === 409 && attempt < 5) continue;
    if (res.status !== 200) throw new Error(`${method} ${path.slice(0, 80)} on ${agent}: ${res.status} ${text}`);
    return text === '' ? undefined : JSON.parse(text);
  }
}

/** `seed` then letters up to `bytes` (ASCII: a byte each). */
function fill(seed: string, bytes: number, letter = 'x'): string {
  return (seed + letter.repeat(bytes)).slice(0, bytes);
}

/** `seed` then two-byte characters (é) up to `bytes`: a limit counts UTF-8 bytes, not characters. */
function twoByte(seed: string, bytes: number): string {
  const rest = bytes - seed.length;
  return seed + (rest % 2 === 1 ? 'x' : '') + 'é'.repeat(Math.floor(rest / 2));
}

/** A map of `pairs` entries whose keys and values are at their limits. */
function fullMap(seed: string, limits: { pairs: number; key: number; value: number }): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i < limits.pairs; i++) out[fill(`${seed}${i}-`, limits.key, 'k')] = fill(`${i}-`, limits.value);
  return out;
}

/** `value` with a `pad` string grown until its JSON is exactly `bytes` long. */
function paddedJson<T extends Record<string, unknown>>(
  value: T,
  key: string,
  bytes: number,
): T & Record<string, string> {
  const bare = JSON.stringify({ ...value, [key]: '' }).length;
  return { ...value, [key]: 'p'.repeat(bytes - bare) };
}

/** Rules of many one-line rules, a comment making up the rest of exactly RULES_MAX bytes. */
function fullRules(seed: string): string {
  let text = '';
  for (let i = 0; text.length < RULES_MAX - 200; i++)
    text += `key_prefix "${seed}/app-${i}/config/" { policy = "read" }\n`;
  return fill(`${text}# `, RULES_MAX, '-');
}

const rowsOf = (bytes: number): number => Math.ceil(TABLE_BYTES / bytes);

// ---- what is written: rows at every limit ----

const POLICIES = Math.max(TOKEN_LINKS_MAX, rowsOf(RULES_MAX));
const policies = Array.from({ length: POLICIES }, (_, i) => ({
  Name: fill(`policy-${i}-`, 128, 'n'),
  Description: twoByte(`p${i}`, DESCRIPTION_MAX),
  Rules: fullRules(`p${i}`),
  Datacenters: Array.from({ length: POLICY_DATACENTERS_MAX }, (_, j) => fill(`dc${i}-${j}-`, DATACENTER_MAX, 'd')),
}));

const TOKEN_BYTES = TOKEN_LINKS_MAX * (NAME_MAX + IDENTITY_DATACENTERS_MAX * DATACENTER_MAX);
const tokenBodies = (policyIds: readonly string[]): Json[] =>
  Array.from({ length: rowsOf(TOKEN_BYTES) }, (_, i) => ({
    Description: fill(`token-${i}-`, DESCRIPTION_MAX),
    Policies: policyIds.slice(0, TOKEN_LINKS_MAX).map((ID) => ({ ID })),
    ServiceIdentities: Array.from({ length: TOKEN_LINKS_MAX }, (_, j) => ({
      ServiceName: fill(`svc-${i}-${j}-`, NAME_MAX, 'a'),
      Datacenters: Array.from({ length: IDENTITY_DATACENTERS_MAX }, (_, k) => fill(`dc-${k}-`, DATACENTER_MAX, 'd')),
    })),
    NodeIdentities: Array.from({ length: TOKEN_LINKS_MAX }, (_, j) => ({
      NodeName: fill(`node-${i}-${j}-`, NAME_MAX, 'a'),
      Datacenter: fill(`dc-${j}-`, DATACENTER_MAX, 'd'),
    })),
  }));

const META_LIMITS = { pairs: META_MAX_PAIRS, key: META_KEY_MAX_LENGTH, value: META_VALUE_MAX_LENGTH };
const INTENTION_BYTES = META_MAX_PAIRS * (META_KEY_MAX_LENGTH + META_VALUE_MAX_LENGTH) + PERMISSIONS_MAX_JSON;
const intentions = Array.from({ length: rowsOf(INTENTION_BYTES) }, (_, i) => {
  const permission = { Action: 'allow', HTTP: { PathPrefix: '/' } };
  const bare = JSON.stringify([permission]).length;
  return {
    source: `${fill(`sns-${i}-`, NAME_MAX_BYTES, 's')}/${fill(`src-${i}-`, NAME_MAX_BYTES, 's')}`,
    destination: `${fill(`dns-${i}-`, NAME_MAX_BYTES, 'd')}/${fill(`dst-${i}-`, NAME_MAX_BYTES, 'd')}`,
    body: {
      Description: fill(`intention-${i}-`, DESCRIPTION_MAX_LENGTH),
      Meta: fullMap(`m${i}-`, META_LIMITS),
      Permissions: [{ Action: 'allow', HTTP: { PathPrefix: fill('/', PERMISSIONS_MAX_JSON - bare + 1, 'p') } }],
    },
  };
});

/** A node row: its Meta and TaggedAddresses; services and checks are larger, so there are more than enough of them. */
const NODE_BYTES = META.pairs * (META.key + META.value) + TAGGED_ADDRESSES.pairs * (TAGGED_ADDRESSES.key + ADDRESS_MAX);
const registrations = Array.from({ length: rowsOf(NODE_BYTES) }, (_, i) => {
  const node = fill(`node-${i}-`, NAME_MAX, 'n');
  const id = fill(`web-${i}-id-`, NAME_MAX, 'i');
  const tagged = fullMap(`t${i}-`, TAGGED_ADDRESSES);
  const check = (c: number): Json => ({
    CheckID: fill(`check-${i}-${c}-`, CHECK_NAME_MAX, 'c'),
    Name: fill(`name-${i}-${c}-`, CHECK_NAME_MAX, 'c'),
    Status: 'passing',
    Notes: twoByte(`n${i}`, NOTES_MAX),
    Output: fill(`out-${i}-${c}-`, OUTPUT_MAX, 'o'),
    ServiceID: id,
    Type: fill('http-', NAME_MAX, 't'),
    Interval: fill('10s-', NAME_MAX, 's'),
    Timeout: fill('1s-', NAME_MAX, 's'),
    Definition: paddedJson({ Interval: '10s' }, 'HTTP', DEFINITION_MAX_JSON),
  });
  return {
    Node: node,
    ID: fill(`id-${i}-`, NAME_MAX, 'i'),
    Address: fill(`10.0.0.${i % 250}.`, ADDRESS_MAX, 'a'),
    TaggedAddresses: tagged,
    NodeMeta: fullMap(`nm${i}-`, META),
    Service: {
      ID: id,
      Service: fill(`web-${i}-`, NAME_MAX, 'w'),
      Tags: Array.from({ length: TAGS_MAX }, (_, t) => fill(`tag-${t}-`, TAG_MAX, 'g')),
      Address: fill(`svc-${i}.`, ADDRESS_MAX, 'a'),
      TaggedAddresses: Object.fromEntries(Object.entries(tagged).map(([k, v]) => [k, { Address: v, Port: 8080 }])),
      Meta: fullMap(`sm${i}-`, META),
      Port: 8080,
      // {"Config":…} is 11 bytes around the Config's own JSON.
      Proxy: { Config: paddedJson({}, 'pad', PROXY_MAX_JSON - JSON.stringify({ Config: {} }).length + 2) },
    },
    Checks: [check(0), check(1)],
  };
});

const kv = Array.from({ length: Math.ceil(TABLE_BYTES / KV_MAX) }, (_, i) => ({
  key: `big/${i}`,
  value: fill(`value-${i}-`, KV_MAX, 'v'),
}));

const caConfig = paddedJson({ LeafCertTTL: '72h' }, 'Padding', CA_CONFIG_MAX_JSON);

/** What each table should list once written: policy IDs, token accessors. */
const written = { policyIds: [] as string[], accessors: [] as string[] };

beforeAll(async () => {
  const etcdctl = await findEtcdctl();
  if (etcdctl === undefined) throw new Error('etcdctl is needed to set up RBAC');
  etcd = await startEtcdCluster({ size: 3 });
  await enableDocumentedRbac(etcd, etcdctl, PREFIX, [CLIENT]);
  await startAll();
  const at = 'server-1';
  for (const p of policies) written.policyIds.push((await call(at, 'PUT', '/v1/acl/policy', p)).ID);
  for (const t of tokenBodies(written.policyIds))
    written.accessors.push((await call(at, 'PUT', '/v1/acl/token', t)).AccessorID);
  for (const x of intentions) {
    const query = `source=${encodeURIComponent(x.source)}&destination=${encodeURIComponent(x.destination)}`;
    await call(at, 'PUT', `/v1/connect/intentions/exact?${query}`, x.body);
  }
  for (const r of registrations) await call(at, 'PUT', '/v1/catalog/register', r);
  for (const { key, value } of kv) await call(at, 'PUT', `/v1/kv/${key}`, value);
  await call(at, 'PUT', '/v1/connect/ca/configuration', { Provider: 'consul', Config: caConfig });
}, 600_000);

afterAll(async () => {
  await stopAll();
  await etcd?.stop();
});

describe('rows at every size limit, well over 4 MiB a table', () => {
  it('each table holds more than gRPC takes in one message', () => {
    const bytes = (rows: readonly unknown[]): number =>
      rows.reduce<number>((n, r) => n + Buffer.byteLength(JSON.stringify(r)), 0);
    const tables = {
      policies,
      tokens: tokenBodies(written.policyIds),
      intentions: intentions.map((x) => x.body),
      nodes: registrations.map(({ Node, ID, Address, TaggedAddresses, NodeMeta }) => ({
        ...{ Node, ID, Address, TaggedAddresses, NodeMeta },
      })),
      services: registrations.map((r) => r.Service),
      // A check's row holds its service's name and tags too.
      checks: registrations.flatMap((r) =>
        r.Checks.map((c: Json) => ({ ...c, ServiceName: r.Service.Service, ServiceTags: r.Service.Tags })),
      ),
      kv,
    };
    for (const [table, rows] of Object.entries(tables))
      expect(bytes(rows), table).toBeGreaterThan(TABLE_BYTES - 64 * 1024);
  });

  it('answers one over a limit with 413 naming the field, through any agent', async () => {
    const status = async (agent: string, method: string, path: string, body: unknown): Promise<[number, string]> => {
      const res = await fetch(`${urls.get(agent)}${path}`, {
        method,
        headers: { 'X-Svc-Token': MANAGEMENT },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      });
      return [res.status, await res.text()];
    };
    const policy = { ...policies[0], Name: 'one-over', Rules: `${policies[0]?.Rules ?? ''}\n` };
    expect(await status(CLIENT, 'PUT', '/v1/acl/policy', policy)).toEqual([
      413,
      'Rules is 65537 bytes, over the limit of 65536 bytes',
    ]);
    const register = {
      ...registrations[0],
      Service: { ...registrations[0]?.Service, Tags: ['x'.repeat(TAG_MAX + 1)] },
    };
    expect(await status('server-2', 'PUT', '/v1/catalog/register', register)).toEqual([
      413,
      'Service.Tags[0] is 257 bytes, over the limit of 256 bytes',
    ]);
    const config = { Provider: 'consul', Config: { ...caConfig, Padding: `${String(caConfig.Padding)}p` } };
    expect(await status('server-1', 'PUT', '/v1/connect/ca/configuration', config)).toEqual([
      413,
      'Config is 65537 bytes as JSON, over the limit of 65536 bytes',
    ]);
  });

  it('every agent starts again after all of them stopped', async () => {
    await stopAll();
    await startAll();
    expect([...urls.keys()].sort()).toEqual(['client-1', 'server-1', 'server-2']);
  }, 300_000);

  describe.each(AGENTS.map(([name]) => name))('%s lists every row intact', (agent) => {
    it('ACL policies', async () => {
      const stubs: Json[] = await call(agent, 'GET', '/v1/acl/policies');
      expect(stubs.map((s) => s.ID).filter((id: string) => written.policyIds.includes(id))).toHaveLength(POLICIES);
      for (const [i, id] of written.policyIds.entries()) {
        const p = await call(agent, 'GET', `/v1/acl/policy/${id}`);
        expect(p).toMatchObject(policies[i] as object);
      }
    });

    it('ACL tokens', async () => {
      const stubs: Json[] = await call(agent, 'GET', '/v1/acl/tokens');
      const bodies = tokenBodies(written.policyIds);
      for (const [i, accessor] of written.accessors.entries()) {
        const stub = stubs.find((s) => s.AccessorID === accessor);
        const body = bodies[i];
        expect(stub?.Description).toBe(body.Description);
        expect(stub?.Policies.map((p: Json) => p.ID)).toEqual(body.Policies.map((p: Json) => p.ID));
        expect(stub?.ServiceIdentities).toEqual(
          body.ServiceIdentities.map((s: Json) => ({ ...s, Datacenters: [...s.Datacenters].sort() })),
        );
        expect(stub?.NodeIdentities).toEqual(body.NodeIdentities);
      }
    });

    it('intentions', async () => {
      const all: Json[] = await call(agent, 'GET', '/v1/connect/intentions');
      expect(all).toHaveLength(intentions.length);
      for (const x of intentions) {
        const [sourceNs, sourceName] = x.source.split('/');
        const found = all.find((y) => y.SourceNS === sourceNs && y.SourceName === sourceName);
        expect(found).toMatchObject(x.body);
      }
    });

    it('catalog nodes, services and checks', async () => {
      const nodes: Json[] = await call(agent, 'GET', '/v1/catalog/nodes');
      for (const r of registrations) {
        const node = nodes.find((n) => n.Node === r.Node);
        expect(node).toMatchObject({
          ID: r.ID,
          Address: r.Address,
          TaggedAddresses: r.TaggedAddresses,
          Meta: r.NodeMeta,
        });
        const held: Json = await call(agent, 'GET', `/v1/catalog/node/${encodeURIComponent(r.Node)}`);
        expect(held.Services[r.Service.ID]).toMatchObject(r.Service);
      }
      const checks: Json[] = await call(agent, 'GET', '/v1/health/state/any');
      for (const r of registrations)
        for (const c of r.Checks) {
          const found = checks.find((x) => x.Node === r.Node && x.CheckID === c.CheckID);
          expect(found).toMatchObject({ ...c, ServiceName: r.Service.Service, ServiceTags: r.Service.Tags });
        }
    });

    it('KV', async () => {
      const entries: Json[] = await call(agent, 'GET', '/v1/kv/big/?recurse');
      expect(entries.map((e) => e.Key)).toEqual(kv.map((e) => e.key).sort());
      for (const e of entries)
        expect(Buffer.from(e.Value, 'base64').toString()).toBe(kv.find((w) => w.key === e.Key)?.value);
    });

    it('the CA configuration', async () => {
      const config: Json = await call(agent, 'GET', '/v1/connect/ca/configuration');
      expect(config.Config).toMatchObject(caConfig);
    });
  });
});
