// The cluster's CA over HTTP, with real agent processes on a three-member etcd cluster: two servers
// (which hold the CA key in etcd's private range and sign) and a client (whose leaves a server signs
// through etcd). One CA from servers started at once; a client's leaf verifies against a server's
// roots and shakes hands (node:tls) with a server's leaf; a rotation on one server wakes roots and
// leaf blocking reads on every agent; 900 concurrent first leaves get distinct serials; no API of
// the client returns the CA key. Every wait is for an event; the test timeout is the hang guard.
import { X509Certificate, createPublicKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectEtcd } from '../../src/state/etcd/index.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { handshake, uriOf, type Leaf, type Roots } from './support/mtls.js';

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly index: number;
}

async function call(agent: AgentProcess, path: string, init?: RequestInit): Promise<Answer> {
  const res = await fetch(`${agent.url}${path}`, init);
  return { status: res.status, text: await res.text(), index: Number(res.headers.get('x-svc-index') ?? 0) };
}

/** A 200 answer's JSON body and index; anything else fails with the agent's text. */
async function read<T>(agent: AgentProcess, path: string): Promise<{ body: T; index: number }> {
  const a = await call(agent, path);
  if (a.status !== 200) throw new Error(`GET ${path}: ${a.status} ${a.text}`);
  return { body: JSON.parse(a.text) as T, index: a.index };
}

/** Polls `get` until `done` accepts what it returned; the test's timeout ends a wait that never comes. */
async function until<T>(get: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (;;) {
    const value = await get();
    if (done(value)) return value;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The agent's roots once its view holds the CA (a client started with the servers may see it a moment later). */
const rootsOf = async (agent: AgentProcess): Promise<{ body: Roots; index: number }> => {
  const a = await until(
    () => call(agent, '/v1/agent/connect/ca/roots'),
    (r) => r.status === 200,
  );
  return { body: JSON.parse(a.text) as Roots, index: a.index };
};

const activeRoot = (roots: Roots): X509Certificate => {
  const root = roots.Roots.find((r) => r.Active);
  if (root === undefined) throw new Error('no active root');
  return new X509Certificate(root.RootCert);
};

const parkedQueries = async (agent: AgentProcess): Promise<number> => {
  const { body } = await read<{ Gauges: { Name: string; Value: number }[] }>(agent, '/v1/agent/metrics');
  return body.Gauges.find((g) => g.Name === 'svc.blocking.parked')?.Value ?? 0;
};

const serialOf = (pem: string): bigint => BigInt(`0x${new X509Certificate(pem).serialNumber}`);

interface Trio {
  readonly prefix: string;
  readonly a: AgentProcess;
  readonly b: AgentProcess;
  readonly c: AgentProcess;
}

describe('the cluster CA over HTTP', () => {
  let etcd: EtcdCluster;
  const running: AgentProcess[] = [];
  let prefixes = 0;
  let shared: Trio;

  const start = (prefix: string, name: string, server: boolean): Promise<AgentProcess> =>
    startAgent({
      config: {
        node_name: name,
        // Re-issue at once after a rotation, and no CSR rate limit: a wave of first leaves is the test.
        connect: { leaf_root_change_spread: '0s', ca_config: { csr_max_per_second: 0 } },
        cluster: { etcd: { prefix }, member_ttl: '2s' },
      },
      args: [...etcd.endpoints.flatMap((url) => ['-etcd', url]), ...(server ? ['-server'] : [])],
    }).then((agent) => {
      running.push(agent);
      return agent;
    });

  /** Two servers and a client on a fresh prefix, all started at once. */
  const startTrio = async (): Promise<Trio> => {
    const prefix = `/svc-ca-http-${process.pid}-${prefixes++}/`;
    const [a, b, c] = await Promise.all([
      start(prefix, 'server-a', true),
      start(prefix, 'server-b', true),
      start(prefix, 'client-c', false),
    ]);
    return { prefix, a, b, c };
  };

  const stopTrio = (t: Trio): Promise<unknown> => Promise.all([t.a, t.b, t.c].map((agent) => agent.stop('SIGKILL')));

  /** The CA keys as etcd holds them under `<prefix>private/`: what only servers may read. */
  const privateCaKeys = async (prefix: string): Promise<{ key: string; pem: string }[]> => {
    const raw = connectEtcd({ endpoints: etcd.endpoints });
    try {
      const { kvs } = await raw.rangePrefix(Buffer.from(`${prefix}private/`), 5_000);
      return kvs.map((kv) => ({
        key: kv.key,
        pem: (JSON.parse(kv.value.toString('utf8')) as { PrivateKey: string }).PrivateKey,
      }));
    } finally {
      raw.close();
    }
  };

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 3 });
    shared = await startTrio();
  }, 60_000);

  afterAll(async () => {
    await Promise.all(running.map((agent) => agent.stop('SIGKILL')));
    await etcd?.stop();
  });

  it('a client agent started before any server says the CA is not initialised, then serves it once a server made it', async () => {
    const prefix = `/svc-ca-http-${process.pid}-${prefixes++}/`;
    const client = await start(prefix, 'early-client', false);
    for (const path of ['/v1/agent/connect/ca/roots', '/v1/connect/ca/roots', '/v1/agent/connect/ca/leaf/web']) {
      expect(await call(client, path)).toMatchObject({ status: 500, text: 'CA has not finished initializing' });
    }
    const server = await start(prefix, 'late-server', true);
    const { body } = await rootsOf(client);
    expect(body.Roots).toHaveLength(1);
    expect((await read<Leaf>(client, '/v1/agent/connect/ca/leaf/web')).body.CertPEM).toContain('BEGIN CERTIFICATE');
    await Promise.all([client.stop('SIGKILL'), server.stop('SIGKILL')]);
  });

  it('two servers started at once create one CA, which every agent serves', async () => {
    const { prefix, a, b, c } = shared;
    const seen = await Promise.all([a, b, c].map(async (agent) => (await rootsOf(agent)).body));
    for (const roots of seen) {
      expect(roots.Roots).toHaveLength(1);
      expect(roots.ActiveRootID).toBe(seen[0]!.ActiveRootID);
      expect(roots.TrustDomain).toBe(seen[0]!.TrustDomain);
    }
    // One key in etcd, the winner's: the other server dropped what it had staged.
    const keys = await privateCaKeys(prefix);
    expect(keys.map((k) => k.key)).toEqual([`${prefix}private/ca/keys/${seen[0]!.ActiveRootID}`]);
  });

  it("a client agent's leaf verifies against a server's roots and shakes hands with a server's leaf", async () => {
    const { a, c } = shared;
    const rootsA = (await rootsOf(a)).body;
    const rootsC = (await rootsOf(c)).body;
    const web = (await read<Leaf>(c, '/v1/agent/connect/ca/leaf/web')).body;
    const api = (await read<Leaf>(a, '/v1/agent/connect/ca/leaf/api')).body;

    const cert = new X509Certificate(web.CertPEM);
    expect(cert.verify(activeRoot(rootsA).publicKey)).toBe(true);
    const spiffeId = `spiffe://${rootsA.TrustDomain}/ns/default/dc/dc1/svc/web`;
    expect(uriOf(cert)).toBe(spiffeId);
    expect(web.ServiceURI).toBe(spiffeId);

    // Each proxy trusts the roots of its own agent: web's are C's, api's are A's.
    const trustC = rootsC.Roots.map((r) => r.RootCert);
    const trustA = rootsA.Roots.map((r) => r.RootCert);
    expect(await handshake(web, trustC, api, trustA)).toEqual({
      serverSaw: api.ServiceURI,
      clientSaw: web.ServiceURI,
      echoed: 'ping',
    });
    expect(await handshake(api, trustA, web, trustC)).toEqual({
      serverSaw: web.ServiceURI,
      clientSaw: api.ServiceURI,
      echoed: 'ping',
    });
  });

  it("no API of the client agent returns the CA key; the only private key it serves is a leaf's own", async () => {
    const { prefix, a, c } = shared;
    const roots = (await rootsOf(a)).body;
    const caKeys = await privateCaKeys(prefix);
    expect(caKeys.length).toBeGreaterThan(0);
    const caKeyBodies = caKeys.map((k) => k.pem.replace(/-----[^-]+-----|\s/g, ''));
    const leafAnswer = await call(c, '/v1/agent/connect/ca/leaf/web');
    expect(leafAnswer.status).toBe(200);

    // ACLs are off on these agents: every endpoint answers whoever asks, as a management token would.
    const rootId = roots.ActiveRootID;
    const paths = [
      '/v1/connect/ca/configuration',
      '/v1/connect/ca/roots',
      '/v1/connect/ca/roots?pem=true',
      '/v1/agent/connect/ca/roots',
      '/v1/agent/self',
      '/v1/agent/metrics',
      '/v1/agent/members',
      '/v1/kv/?recurse',
      `/v1/kv/private/ca/keys/${rootId}`,
      `/v1/kv/${prefix.slice(1)}private/ca/keys/${rootId}`,
      `/v1/kv/${prefix.slice(1)}private?recurse`,
      '/v1/kv/private?recurse',
    ];
    const answers = await Promise.all(paths.map(async (path) => ({ path, ...(await call(c, path)) })));
    // A configuration change through a client runs on a server (docs/decisions.md D25); refused, it
    // says nothing of the key either.
    const put = await call(c, '/v1/connect/ca/configuration', {
      method: 'PUT',
      body: JSON.stringify({ Provider: 'consul', Config: { PrivateKeyType: 'dsa' } }),
    });
    expect(put.status).toBe(400);
    for (const { path, text } of [
      ...answers,
      { path: 'PUT configuration', text: put.text },
      { path: 'leaf', text: leafAnswer.text },
    ]) {
      for (const body of caKeyBodies) expect(text.replace(/\\n|\s/g, ''), path).not.toContain(body);
      if (path !== 'leaf') expect(text, path).not.toContain('PRIVATE KEY');
    }

    // The leaf's key is the leaf's: it matches the leaf certificate and no root.
    const leaf = JSON.parse(leafAnswer.text) as Leaf;
    const spki = (pem: string): string =>
      createPublicKey(pem).export({ type: 'spki', format: 'der' }).toString('base64');
    expect(spki(leaf.PrivateKeyPEM)).toBe(
      spki(new X509Certificate(leaf.CertPEM).publicKey.export({ type: 'spki', format: 'pem' }) as string),
    );
    for (const root of roots.Roots)
      expect(spki(leaf.PrivateKeyPEM)).not.toBe(
        spki(new X509Certificate(root.RootCert).publicKey.export({ type: 'spki', format: 'pem' }) as string),
      );
  });

  it('3 agents x 300 concurrent first leaves get 900 distinct serials, increasing in commit order, all from the one CA', async () => {
    const { a, b, c } = shared;
    const named = [
      ['a', a],
      ['b', b],
      ['c', c],
    ] as const;
    const answers = await Promise.all(
      named.flatMap(([name, agent]) =>
        Array.from({ length: 300 }, async (_, i) => ({
          service: `s-${name}-${i}`,
          ...(await call(agent, `/v1/agent/connect/ca/leaf/s-${name}-${i}`)),
        })),
      ),
    );
    const failed = answers.filter((x) => x.status !== 200);
    expect(failed.slice(0, 3).map((x) => `${x.service}: ${x.status} ${x.text}`)).toEqual([]);
    const leaves = answers.map((x) => ({ service: x.service, leaf: JSON.parse(x.text) as Leaf }));

    const serials = leaves.map(({ leaf }) => serialOf(leaf.CertPEM));
    expect(new Set(serials).size).toBe(900);
    // Serials are taken in guarded batches: a leaf recorded at a later index has a higher serial.
    const byIndex = leaves
      .map(({ leaf }, i) => ({ index: leaf.ModifyIndex, serial: serials[i]! }))
      .sort((x, y) => x.index - y.index || (x.serial < y.serial ? -1 : 1));
    for (let i = 1; i < byIndex.length; i++) expect(byIndex[i]!.serial).toBeGreaterThan(byIndex[i - 1]!.serial);

    const roots = (await rootsOf(a)).body;
    expect(roots.Roots).toHaveLength(1);
    const root = activeRoot(roots);
    for (const { service, leaf } of leaves) {
      const cert = new X509Certificate(leaf.CertPEM);
      expect(cert.verify(root.publicKey), service).toBe(true);
      expect(uriOf(cert)).toBe(`spiffe://${roots.TrustDomain}/ns/default/dc/dc1/svc/${service}`);
    }
  }, 120_000);

  it('a rotation on one server wakes roots and leaf blocking reads on every agent, with leaves from the new root', async () => {
    const trio = await startTrio();
    try {
      const agents = [trio.a, trio.b, trio.c];
      const before = await Promise.all(agents.map(rootsOf));
      const oldRoot = activeRoot(before[0]!.body);
      const leaves = await Promise.all(agents.map((agent) => read<Leaf>(agent, '/v1/agent/connect/ca/leaf/web')));
      for (const { body } of leaves) expect(new X509Certificate(body.CertPEM).verify(oldRoot.publicKey)).toBe(true);

      const rootsWoken = agents.map((agent, i) =>
        read<Roots>(agent, `/v1/agent/connect/ca/roots?index=${before[i]!.index}&wait=120s`),
      );
      const leavesWoken = agents.map((agent, i) =>
        read<Leaf>(agent, `/v1/agent/connect/ca/leaf/web?index=${leaves[i]!.body.ModifyIndex}&wait=120s`),
      );
      // Both reads are parked on every agent before the rotation starts.
      for (const agent of agents)
        await until(
          () => parkedQueries(agent),
          (n) => n >= 2,
        );

      const put = await call(trio.a, '/v1/connect/ca/configuration', {
        method: 'PUT',
        body: JSON.stringify({
          Provider: 'consul',
          Config: { PrivateKeyType: 'ec', PrivateKeyBits: 384, CSRMaxPerSecond: 0 },
        }),
      });
      expect(put.status, put.text).toBe(200);

      const newRoots = await Promise.all(rootsWoken);
      const newLeaves = await Promise.all(leavesWoken);
      const newRootId = newRoots[0]!.body.ActiveRootID;
      expect(newRootId).not.toBe(before[0]!.body.ActiveRootID);
      const newRoot = activeRoot(newRoots[0]!.body);
      for (const [i, roots] of newRoots.entries()) {
        expect(roots.index).toBeGreaterThan(before[i]!.index);
        expect(roots.body.ActiveRootID).toBe(newRootId);
        expect(roots.body.Roots).toHaveLength(2);
        expect(roots.body.Roots.find((r) => r.Active)).toMatchObject({ PrivateKeyType: 'ec', PrivateKeyBits: 384 });
      }
      for (const [i, leaf] of newLeaves.entries()) {
        expect(leaf.body.ModifyIndex).toBeGreaterThan(leaves[i]!.body.ModifyIndex);
        const cert = new X509Certificate(leaf.body.CertPEM);
        expect(cert.verify(newRoot.publicKey)).toBe(true);
        expect(cert.verify(oldRoot.publicKey)).toBe(false);
      }
      // The re-issued leaves of a client and of a server shake hands over the new roots.
      const trust = newRoots[0]!.body.Roots.map((r) => r.RootCert);
      const [fromA, , fromC] = newLeaves.map((l) => l.body);
      expect((await handshake(fromC!, trust, fromA!, trust)).clientSaw).toBe(fromC!.ServiceURI);
    } finally {
      await stopTrio(trio);
    }
  }, 90_000);

  // The guard (30 s) is shorter than a client's wait for a signing answer (60 s): a client that
  // asked anyway would fail it.
  it('a client agent whose servers have all left fails a new leaf at once with CA_NO_SERVER, and serves its cached one', async () => {
    const trio = await startTrio();
    try {
      const cached = await read<Leaf>(trio.c, '/v1/agent/connect/ca/leaf/web');
      await Promise.all([trio.a.stop(), trio.b.stop()]);
      await until(
        () => read<{ Tags: { role: string } }[]>(trio.c, '/v1/agent/members'),
        ({ body }) => body.every((m) => m.Tags.role !== 'consul'),
      );
      const fresh = await call(trio.c, '/v1/agent/connect/ca/leaf/api');
      expect([fresh.status, fresh.text]).toEqual([
        503,
        'No CA server answered the leaf signing request: no server agent is a member of the cluster',
      ]);
      const again = await read<Leaf>(trio.c, '/v1/agent/connect/ca/leaf/web');
      expect(again.body.SerialNumber).toBe(cached.body.SerialNumber);
    } finally {
      await stopTrio(trio);
    }
  });
});
