// The CA endpoints on the real agent: the roots (both endpoints, ?pem, blocking, X-Cache/Age), the
// leaf (shape, headers, cache, blocking, wake-up on rotation), the CA configuration (validation,
// TTL-only changes, rotation), the ACL cases of Consul's leaf tests with service:write checked on
// every request (docs/decisions.md D5), and the CA surviving a restart.
import { X509Certificate, createHash, createPrivateKey } from 'node:crypto';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { ANONYMOUS_ACCESSOR_ID } from '../../src/acl/builtin.js';
import { permissionDenied } from '../../src/acl/errors.js';
import { answerOf, answerOfError } from '../support/errors.js';
import { startAgent, tempDir, type AgentProcess } from './support/agent-process.js';
import { get as rawGet, openRequest, type RawResponse } from './support/raw-http.js';

const ROOT_KEYS = [
  'ID',
  'Name',
  'SerialNumber',
  'SigningKeyID',
  'ExternalTrustDomain',
  'NotBefore',
  'NotAfter',
  'RootCert',
  'IntermediateCerts',
  'Active',
  'PrivateKeyType',
  'PrivateKeyBits',
  'CreateIndex',
  'ModifyIndex',
];
const LEAF_KEYS = [
  'SerialNumber',
  'CertPEM',
  'PrivateKeyPEM',
  'Service',
  'ServiceURI',
  'ValidAfter',
  'ValidBefore',
  'CreateIndex',
  'ModifyIndex',
];

interface Root {
  ID: string;
  RootCert: string;
  IntermediateCerts: string[] | null;
  Active: boolean;
  SigningKeyID: string;
  ModifyIndex: number;
  PrivateKeyType: string;
}
interface Roots {
  ActiveRootID: string;
  TrustDomain: string;
  Roots: Root[];
}
interface Leaf {
  SerialNumber: string;
  CertPEM: string;
  PrivateKeyPEM: string;
  ServiceURI: string;
  ValidAfter: string;
  ValidBefore: string;
  ModifyIndex: number;
  CreateIndex: number;
}

const pems = (text: string): X509Certificate[] =>
  [...text.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g)].map(
    (m) => new X509Certificate(m[0]),
  );

const SPREAD_ZERO = { connect: { leaf_root_change_spread: '0s', ca_config: { csr_max_per_second: 0 } } };

/** An error answer as `get()` and `put()` return it, for toMatchObject. */
const failed = ([status, text]: [number, string]) => ({ status, text });

async function get(
  agent: AgentProcess,
  path: string,
  token?: string,
): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(`${agent.url}${path}`, token === undefined ? {} : { headers: { 'X-Svc-Token': token } });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

async function put(
  agent: AgentProcess,
  path: string,
  body: unknown,
  token?: string,
): Promise<{ status: number; text: string }> {
  const res = await fetch(`${agent.url}${path}`, {
    method: 'PUT',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...(token === undefined ? {} : { headers: { 'X-Svc-Token': token } }),
  });
  return { status: res.status, text: await res.text() };
}

describe('CA endpoints', () => {
  let agent: AgentProcess;
  beforeAll(async () => {
    agent = await startAgent({ config: SPREAD_ZERO });
  });
  afterAll(() => agent.stop());

  it('serves the roots with the exact shape, MISS then HIT, identical bodies', async () => {
    const first = await get(agent, '/v1/agent/connect/ca/roots');
    expect(first.status).toBe(200);
    expect(first.headers.get('x-cache')).toBe('MISS');
    expect(first.headers.get('age')).toBeNull();
    const roots = JSON.parse(first.text) as Roots;
    expect(Object.keys(roots)).toEqual(['ActiveRootID', 'TrustDomain', 'Roots']);
    expect(roots.TrustDomain).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.consul$/);
    expect(roots.Roots).toHaveLength(1);
    const root = roots.Roots[0]!;
    expect(Object.keys(root)).toEqual(ROOT_KEYS);
    const der = pems(root.RootCert)[0]!.raw;
    const sha1 = createHash('sha1').update(der).digest('hex').match(/../g)!.join(':');
    expect(root.ID).toBe(sha1);
    expect(roots.ActiveRootID).toBe(sha1);
    expect(first.headers.get('x-svc-index')).toBe(String(root.ModifyIndex));
    expect(first.text).toContain('"SerialNumber":1,'); // an integer
    expect(first.text).toContain('"IntermediateCerts":null');

    const second = await get(agent, '/v1/agent/connect/ca/roots');
    expect(second.headers.get('x-cache')).toBe('HIT');
    expect(second.headers.get('age')).toBe('0');
    expect(second.text).toBe(first.text);

    const server = await get(agent, '/v1/connect/ca/roots');
    expect(server.text).toBe(first.text);
    expect(server.headers.get('x-cache')).toBeNull();
    const pretty = await get(agent, '/v1/agent/connect/ca/roots?pretty');
    expect(pretty.text).toBe(`${JSON.stringify(JSON.parse(first.text), null, 4)}\n`);
  });

  it('serves the PEM chain with ?pem=true and rejects a non-boolean pem', async () => {
    const res = await get(agent, '/v1/connect/ca/roots?pem=true');
    expect(res.headers.get('content-type')).toBe('application/pem-certificate-chain');
    const roots = JSON.parse((await get(agent, '/v1/connect/ca/roots')).text) as Roots;
    expect(res.text).toBe(roots.Roots.map((r) => r.RootCert + (r.IntermediateCerts ?? []).join('')).join(''));
    const bad = await get(agent, '/v1/connect/ca/roots?pem=yes');
    expect(bad).toMatchObject({ status: 400, text: "The 'pem' query parameter must be a boolean value" });
  });

  it("issues a leaf in Consul's shape and caches it", async () => {
    const roots = JSON.parse((await get(agent, '/v1/agent/connect/ca/roots')).text) as Roots;
    const first = await get(agent, '/v1/agent/connect/ca/leaf/billing');
    expect(first.status).toBe(200);
    expect(first.headers.get('x-cache')).toBe('MISS');
    const leaf = JSON.parse(first.text) as Leaf;
    expect(Object.keys(leaf)).toEqual(LEAF_KEYS);
    expect(leaf.ServiceURI).toBe(`spiffe://${roots.TrustDomain}/ns/default/dc/dc1/svc/billing`);
    expect(leaf.ModifyIndex).toBe(leaf.CreateIndex);
    expect(first.headers.get('x-svc-index')).toBe(String(leaf.ModifyIndex));
    expect(leaf.PrivateKeyPEM).toMatch(/^-----BEGIN EC PRIVATE KEY-----\n/);
    const [cert] = pems(leaf.CertPEM);
    const active = roots.Roots.find((r) => r.Active)!;
    expect(cert!.verify(pems(active.RootCert)[0]!.publicKey)).toBe(true);
    expect(cert!.checkPrivateKey(createPrivateKey(leaf.PrivateKeyPEM))).toBe(true);
    expect(leaf.SerialNumber).toBe(cert!.serialNumber.toLowerCase().match(/../g)!.join(':'));
    expect(Date.parse(leaf.ValidBefore) - Date.parse(leaf.ValidAfter)).toBe(72 * 3_600_000);
    expect(leaf.ValidAfter).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

    const second = await get(agent, '/v1/agent/connect/ca/leaf/billing');
    expect(second.headers.get('x-cache')).toBe('HIT');
    expect(second.text).toBe(first.text);
    // A blocking read at the leaf's index times out with the same leaf.
    const blocked = await get(agent, `/v1/agent/connect/ca/leaf/billing?index=${leaf.ModifyIndex}&wait=100ms`);
    expect(blocked.status).toBe(200);
    expect(blocked.text).toBe(first.text);
    expect(blocked.headers.get('x-cache')).toBe('HIT');
    // ?ns selects the namespace of the SPIFFE ID.
    const other = JSON.parse((await get(agent, '/v1/agent/connect/ca/leaf/billing?ns=team-a')).text) as Leaf;
    expect(other.ServiceURI).toBe(`spiffe://${roots.TrustDomain}/ns/team-a/dc/dc1/svc/billing`);
    expect(BigInt(`0x${other.SerialNumber.replace(/:/g, '')}`)).toBeGreaterThan(
      BigInt(`0x${leaf.SerialNumber.replace(/:/g, '')}`),
    );
    expect(await get(agent, '/v1/agent/connect/ca/leaf/billing?index=abc')).toMatchObject(
      failed(answerOf('INVALID_INDEX')),
    );
  });

  it('shows and validates the CA configuration; a TTL change rotates nothing', async () => {
    const config = await get(agent, '/v1/connect/ca/configuration');
    expect(config.status).toBe(200);
    const body = JSON.parse(config.text) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual([
      'Provider',
      'Config',
      'State',
      'ForceWithoutCrossSigning',
      'CreateIndex',
      'ModifyIndex',
    ]);
    expect(body).toMatchObject({ Provider: 'consul', State: null, ForceWithoutCrossSigning: false });
    expect(body.Config).toMatchObject({ LeafCertTTL: '72h', IntermediateCertTTL: '8760h', RootCertTTL: '87600h' });
    expect(config.text).not.toMatch(/PRIVATE KEY/);

    const decodeFailed = (detail: string) => answerOf('BODY_DECODE', { prefix: 'Request decode failed', detail });
    const cases: [unknown, [number, string]][] = [
      ['', decodeFailed('EOF')],
      [{ Foo: 1 }, decodeFailed('json: unknown field "Foo"')],
      [
        { Provider: 'consul', Config: { LeafCertTTL: '10m' } },
        answerOf('CA_CONFIG_INVALID', { detail: 'leaf cert TTL must be greater or equal than 1h0m0s' }),
      ],
      [
        { Provider: 'consul', Config: { IntermediateCertTTL: '100h' } },
        answerOf('CA_CONFIG_INVALID', {
          detail: 'Intermediate Cert TTL must be greater or equal than 3 * LeafCertTTL (>=216h0m0s).',
        }),
      ],
      [{ Provider: 'vault', Config: {} }, answerOf('CA_UNKNOWN_PROVIDER', { provider: 'vault' })],
      [{ Provider: 'consul', Config: {}, State: { x: '1' } }, answerOf('CA_STATE_READ_ONLY')],
    ];
    for (const [sent, answer] of cases)
      expect(await put(agent, '/v1/connect/ca/configuration', sent)).toEqual(failed(answer));

    const before = (await get(agent, '/v1/connect/ca/roots')).text;
    expect(
      await put(agent, '/v1/connect/ca/configuration', {
        Provider: 'consul',
        Config: { LeafCertTTL: '48h', CSRMaxPerSecond: 0 },
      }),
    ).toEqual({ status: 200, text: '' });
    expect((await get(agent, '/v1/connect/ca/roots')).text).toBe(before);
    const after = JSON.parse((await get(agent, '/v1/connect/ca/configuration')).text) as {
      Config: Record<string, unknown>;
      ModifyIndex: number;
    };
    expect(after.Config).toEqual({ CSRMaxPerSecond: 0, LeafCertTTL: '48h' });
    expect(after.ModifyIndex).toBeGreaterThan(body.ModifyIndex as number);
    const leaf = JSON.parse((await get(agent, '/v1/agent/connect/ca/leaf/ttl-check')).text) as Leaf;
    expect(Date.parse(leaf.ValidBefore) - Date.parse(leaf.ValidAfter)).toBe(48 * 3_600_000);
  });

  it('wakes blocking leaf and roots reads on a rotation (spread 0s)', async () => {
    const roots = JSON.parse((await get(agent, '/v1/agent/connect/ca/roots')).text) as Roots;
    const rootsIndex = roots.Roots.find((r) => r.Active)!.ModifyIndex;
    const leaf = JSON.parse((await get(agent, '/v1/agent/connect/ca/leaf/web')).text) as Leaf;
    // Both reads wait far longer than vitest lets this test run (its timeout is the hang guard), so
    // only the rotation can answer them in time. Each request is on the agent's socket before the
    // rotation is sent; the roots read's X-Cache: MISS below proves it was parked when the roots
    // changed (a read arriving after the change, or timing out, is answered from the cache: HIT).
    const park = async (path: string): Promise<{ socket: Socket; response: Promise<RawResponse> }> => {
      const sent = await openRequest(agent.port, rawGet(`${path}&wait=10m`));
      onTestFinished(() => void sent.socket.destroy());
      await new Promise((flushed) => sent.socket.write('', flushed));
      return sent;
    };
    const blockedLeaf = await park(`/v1/agent/connect/ca/leaf/web?index=${leaf.ModifyIndex}`);
    const blockedRoots = await park(`/v1/agent/connect/ca/roots?index=${rootsIndex}`);
    expect(
      (
        await put(agent, '/v1/connect/ca/configuration', {
          Provider: 'consul',
          Config: { PrivateKeyType: 'rsa', PrivateKeyBits: 2048, CSRMaxPerSecond: 0 },
        })
      ).status,
    ).toBe(200);
    const [newLeafRaw, newRootsRaw] = await Promise.all([blockedLeaf.response, blockedRoots.response]);
    const newLeafRes = { headers: new Headers(newLeafRaw.headers), text: newLeafRaw.body.toString() };
    const newRootsRes = { headers: new Headers(newRootsRaw.headers), text: newRootsRaw.body.toString() };

    const newRoots = JSON.parse(newRootsRes.text) as Roots;
    expect(newRootsRes.headers.get('x-cache')).toBe('MISS');
    expect(newRoots.Roots).toHaveLength(2);
    const active = newRoots.Roots.find((r) => r.Active)!;
    expect(active.PrivateKeyType).toBe('rsa');
    expect(newRoots.ActiveRootID).toBe(active.ID);
    expect(active.IntermediateCerts).toHaveLength(1);

    const newLeaf = JSON.parse(newLeafRes.text) as Leaf;
    expect(newLeafRes.headers.get('x-cache')).toBe('MISS');
    expect(newLeaf.ModifyIndex).toBeGreaterThan(leaf.ModifyIndex);
    const chain = pems(newLeaf.CertPEM);
    expect(chain).toHaveLength(2);
    expect(chain[0]!.verify(pems(active.RootCert)[0]!.publicKey)).toBe(true);
    expect(chain[1]!.raw.equals(pems(active.IntermediateCerts![0]!)[0]!.raw)).toBe(true);
    const oldRoot = newRoots.Roots.find((r) => !r.Active)!;
    expect(chain[1]!.verify(pems(oldRoot.RootCert)[0]!.publicKey)).toBe(true);
    // A non-blocking read of a leaf from before the rotation gets a new one at once.
    const billing = JSON.parse((await get(agent, '/v1/agent/connect/ca/leaf/billing')).text) as Leaf;
    expect(pems(billing.CertPEM)[0]!.verify(pems(active.RootCert)[0]!.publicKey)).toBe(true);
  });
});

describe('leaf ACLs (D5)', () => {
  const MANAGEMENT = '2b1b7f6e-9d3a-4c1e-8f4a-6d5e4c3b2a19';
  let agent: AgentProcess;
  const tokens: Record<string, string> = {};
  const accessors: Record<string, string> = {};
  const denied = (who: string, resource: 'service' | 'operator', access: 'read' | 'write', name?: string) => {
    const subject =
      who === 'anonymous'
        ? { accessorId: ANONYMOUS_ACCESSOR_ID, anonymous: true }
        : { accessorId: accessors[who] as string, anonymous: false };
    return failed(answerOfError(permissionDenied(subject, resource, access, name)));
  };

  beforeAll(async () => {
    agent = await startAgent({
      config: {
        ...SPREAD_ZERO,
        acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } },
      },
    });
    const create = async (name: string, rules: string): Promise<string> => {
      expect((await put(agent, '/v1/acl/policy', { Name: name, Rules: rules }, MANAGEMENT)).status).toBe(200);
      const res = await put(agent, '/v1/acl/token', { Policies: [{ Name: name }] }, MANAGEMENT);
      const token = JSON.parse(res.text) as { SecretID: string; AccessorID: string };
      accessors[token.SecretID] = token.AccessorID;
      return token.SecretID;
    };
    tokens.write = await create('web-write', 'service "web" { policy = "write" }');
    tokens.read = await create('web-read', 'service "web" { policy = "read" }');
    tokens.operatorRead = await create('op-read', 'operator = "read"');
  });
  afterAll(() => agent.stop());

  it('denies no token and service:read, allows service:write, on every request', async () => {
    expect(await get(agent, '/v1/agent/connect/ca/leaf/web')).toMatchObject(
      denied('anonymous', 'service', 'write', 'web'),
    );
    const ok = await get(agent, '/v1/agent/connect/ca/leaf/web', tokens.write);
    expect(ok.status).toBe(200);
    expect((await get(agent, '/v1/agent/connect/ca/leaf/web', tokens.write)).headers.get('x-cache')).toBe('HIT');
    // The leaf is cached now; a weaker token still gets nothing.
    expect(await get(agent, '/v1/agent/connect/ca/leaf/web', tokens.read)).toMatchObject(
      denied(tokens.read as string, 'service', 'write', 'web'),
    );
    expect(await get(agent, '/v1/agent/connect/ca/leaf/db', tokens.write)).toMatchObject(
      denied(tokens.write as string, 'service', 'write', 'db'),
    );
    expect(await get(agent, '/v1/agent/connect/ca/leaf/web', 'not-a-token')).toMatchObject(
      failed(answerOf('ACL_NOT_FOUND')),
    );
  });

  it('needs no token for the roots, operator:read and operator:write for the configuration', async () => {
    expect((await get(agent, '/v1/agent/connect/ca/roots')).status).toBe(200);
    expect((await get(agent, '/v1/connect/ca/roots')).status).toBe(200);
    expect(await get(agent, '/v1/connect/ca/configuration')).toMatchObject(denied('anonymous', 'operator', 'read'));
    expect((await get(agent, '/v1/connect/ca/configuration', tokens.operatorRead)).status).toBe(200);
    expect(
      await put(agent, '/v1/connect/ca/configuration', { Provider: 'consul', Config: {} }, tokens.operatorRead),
    ).toMatchObject(denied(tokens.operatorRead as string, 'operator', 'write'));
    expect(
      (
        await put(
          agent,
          '/v1/connect/ca/configuration',
          { Provider: 'consul', Config: { LeafCertTTL: '24h' } },
          MANAGEMENT,
        )
      ).status,
    ).toBe(200);
  });
});

describe('CA settings from the agent config', () => {
  it('uses connect.trust_domain (D9) and answers 429 past csr_max_per_second', async () => {
    const agent = await startAgent({
      config: { connect: { trust_domain: 'Mesh.Example', ca_config: { csr_max_per_second: 1 } } },
    });
    try {
      const roots = JSON.parse((await get(agent, '/v1/agent/connect/ca/roots')).text) as Roots;
      expect(roots.TrustDomain).toBe('mesh.example');
      // One token per second, burst 1, 500 ms of waiting at most: of three at once, one is refused.
      const answers = await Promise.all(['x', 'y', 'z'].map((s) => get(agent, `/v1/agent/connect/ca/leaf/${s}`)));
      const [limitedStatus] = answerOf('CSR_RATE_LIMITED');
      const limited = answers.filter((a) => a.status === limitedStatus);
      expect(limited.length).toBeGreaterThanOrEqual(1);
      expect(limited[0]).toMatchObject(failed(answerOf('CSR_RATE_LIMITED')));
      const ok = answers.find((a) => a.status === 200)!;
      expect((JSON.parse(ok.text) as Leaf).ServiceURI).toMatch(
        /^spiffe:\/\/mesh\.example\/ns\/default\/dc\/dc1\/svc\/[xyz]$/,
      );
    } finally {
      await agent.stop();
    }
  });
});

describe('CA persistence', () => {
  it('keeps the root and never reuses a serial across restarts', async () => {
    const dir = await tempDir();
    try {
      let agent = await startAgent({ dataDir: dir.path, config: SPREAD_ZERO });
      const roots = JSON.parse((await get(agent, '/v1/agent/connect/ca/roots')).text) as Roots;
      const serials: bigint[] = [];
      for (const name of ['a', 'b', 'c']) {
        const leaf = JSON.parse((await get(agent, `/v1/agent/connect/ca/leaf/${name}`)).text) as Leaf;
        serials.push(BigInt(`0x${leaf.SerialNumber.replace(/:/g, '')}`));
      }
      expect(await agent.stop()).toBe(0);

      agent = await startAgent({ dataDir: dir.path, config: SPREAD_ZERO });
      const again = JSON.parse((await get(agent, '/v1/agent/connect/ca/roots')).text) as Roots;
      expect(again.ActiveRootID).toBe(roots.ActiveRootID);
      expect(again.TrustDomain).toBe(roots.TrustDomain);
      const leaf = JSON.parse((await get(agent, '/v1/agent/connect/ca/leaf/a')).text) as Leaf;
      expect(BigInt(`0x${leaf.SerialNumber.replace(/:/g, '')}`)).toBeGreaterThan(serials[2]!);
      expect(pems(leaf.CertPEM)[0]!.verify(pems(again.Roots[0]!.RootCert)[0]!.publicKey)).toBe(true);
      await agent.stop();
    } finally {
      await dir.remove();
    }
  });
});
