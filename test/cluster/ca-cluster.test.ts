// The CA shared by several agents on one etcd prefix (each agent an EtcdStore of its own): one CA
// from concurrent starts, one rotation from concurrent rotations, serials unique and increasing
// across agents, the CA key outside the shared view, and leaves of a client agent (which holds no
// key) signed by a server through etcd, proven by a mutual-TLS handshake.
import { X509Certificate } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ServerCa } from '../../src/connect/ca/server-ca.js';
import type { CertificateAuthority, IssuedLeaf } from '../../src/connect/ca/authority.js';
import { CaRecords } from '../../src/connect/ca/ca-records.js';
import { ClientCa } from '../../src/connect/ca/client-ca.js';
import { ClusterKeyStore } from '../../src/connect/ca/cluster-key-store.js';
import { sharedCustody } from '../../src/connect/ca/custody.js';
import { ROOTS_TABLE } from '../../src/connect/ca/model.js';
import { RemoteLeafSource, serveSigningRequests } from '../../src/connect/ca/remote-signer.js';
import { LocalSigner } from '../../src/connect/ca/signer.js';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/log.js';
import {
  connectEtcd,
  type EtcdStore,
  openEtcdPrivateRange,
  openEtcdMailbox,
  openEtcdStore,
} from '../../src/state/etcd/index.js';
import { handshake, type LeafKeys } from '../integration/support/mtls.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { DEFAULT_CA } from '../unit/connect/ca/support.js';

let cluster: EtcdCluster;
let prefixes = 0;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  cluster = await startEtcdCluster({ size: 1 });
}, 180_000);
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});
afterAll(async () => {
  await cluster?.stop();
});

const freshPrefix = (): string => `/svc-ca-test/${process.pid}/${prefixes++}/`;
const etcd = (): { endpoints: string[] } => ({ endpoints: cluster.endpoints });

async function openView(prefix: string): Promise<EtcdStore> {
  const store = await openEtcdStore({ etcd: etcd(), prefix, log: silentLogger });
  cleanups.push(() => store.close());
  return store;
}

interface Agent<C extends CertificateAuthority = CertificateAuthority> {
  readonly store: EtcdStore;
  readonly ca: C;
}

/** A server agent: the shared view, the key in the private range, and it answers signing requests. */
async function startServer(prefix: string, bootstrap = DEFAULT_CA): Promise<Agent<ServerCa>> {
  const store = await openView(prefix);
  const range = openEtcdPrivateRange({ etcd: etcd(), prefix });
  cleanups.push(() => range.close());
  const ca = await ServerCa.open({
    store,
    signer: new LocalSigner(),
    clock: systemClock,
    random: Math.random,
    log: silentLogger,
    datacenter: 'dc1',
    bootstrap,
    custody: sharedCustody(store, new ClusterKeyStore(range)),
  });
  cleanups.push(() => ca.close());
  const channel = openEtcdMailbox({ etcd: etcd(), prefix, log: silentLogger });
  cleanups.push(() => channel.close());
  serveSigningRequests(channel, ca, { datacenter: 'dc1', log: silentLogger, authorize: () => undefined });
  return { store, ca };
}

/** A client agent: the shared view and a remote signer; it opens nothing under `private/`. */
async function startClient(prefix: string, deadlineMs?: number): Promise<Agent> {
  const store = await openView(prefix);
  const channel = openEtcdMailbox({ etcd: etcd(), prefix, log: silentLogger });
  cleanups.push(() => channel.close());
  const remote = new RemoteLeafSource({
    channel,
    datacenter: 'dc1',
    node: 'client-1',
    deadlineMs,
    keys: new LocalSigner(),
  });
  const ca = new ClientCa(new CaRecords(store, systemClock), remote);
  cleanups.push(() => ca.close());
  return { store, ca };
}

async function privateKeys(prefix: string): Promise<string[]> {
  const raw = connectEtcd(etcd());
  try {
    return (await raw.rangePrefix(Buffer.from(`${prefix}private/`), 5_000)).kvs.map((kv) => kv.key);
  } finally {
    raw.close();
  }
}

const rootsOf = (agent: Agent): string[] => agent.ca.roots().roots.map((r) => r.value.RootCert);

describe('the CA on a shared etcd prefix', () => {
  it('creates exactly one CA when two servers start at once, and keeps its key out of the view', async () => {
    const prefix = freshPrefix();
    const [a, b] = await Promise.all([startServer(prefix), startServer(prefix)]);
    expect(a.ca.roots().roots).toHaveLength(1);
    expect(b.ca.roots().activeRootId).toBe(a.ca.roots().activeRootId);
    expect(b.ca.configuration().value.ClusterID).toBe(a.ca.configuration().value.ClusterID);
    // The loser's staged key was dropped: one key, the winner's, under private/.
    expect(await privateKeys(prefix)).toEqual([`${prefix}private/ca/keys/${a.ca.roots().activeRootId}`]);
    // No row of the view holds a private key.
    expect(a.store.get('connect-ca', 'provider')).toBeUndefined();
    expect(JSON.stringify(a.store.list('connect-ca', ''))).not.toContain('PRIVATE KEY');
    // Both sign with it.
    const [la, lb] = await Promise.all([a.ca.signLeaf('default', 'web'), b.ca.signLeaf('default', 'api')]);
    const root = new X509Certificate(rootsOf(a)[0]!);
    expect(new X509Certificate(la.certPem).verify(root.publicKey)).toBe(true);
    expect(new X509Certificate(lb.certPem).verify(root.publicKey)).toBe(true);
  });

  it('sweeps the key of a root never published (a server died between staging it and the commit), an hour later', async () => {
    const prefix = freshPrefix();
    const a = await startServer(prefix);
    const range = openEtcdPrivateRange({ etcd: etcd(), prefix });
    cleanups.push(() => range.close());
    // What a crashed server leaves: a staged key whose root never reached the roots table.
    expect(await range.create('ca/keys/never-published', { RootID: 'never-published', PrivateKey: 'x' })).toBe(true);
    const active = `${prefix}private/ca/keys/${a.ca.roots().activeRootId}`;
    // The first sweep only marks where it stood: the key may belong to a rotation in flight.
    expect(await a.ca.sweepKeys()).toBe(0);
    expect(await privateKeys(prefix)).toContain(`${prefix}private/ca/keys/never-published`);
    await a.store.commit([{ op: 'set', table: 'kv', key: 'tick', value: 1 }]);
    expect(await a.ca.sweepKeys()).toBe(1);
    expect(await privateKeys(prefix)).toEqual([active]);
  });

  it('gives 3 servers x 300 concurrent leaves 900 distinct serials, increasing in commit order', async () => {
    const prefix = freshPrefix();
    const servers = await Promise.all([startServer(prefix), startServer(prefix), startServer(prefix)]);
    const waves = await Promise.all(
      servers.map((s) => Promise.all(Array.from({ length: 300 }, (_, i) => s.ca.signLeaf('default', `svc-${i}`)))),
    );
    const all = waves.flat();
    expect(new Set(all.map((l) => l.serial)).size).toBe(900);
    const certSerials = new Set(all.map((l) => BigInt(`0x${new X509Certificate(l.certPem).serialNumber}`)));
    expect(certSerials.size).toBe(900);
    // Each batch of serials lies above every batch committed before it, on every agent.
    const byIndex = [...all].sort((x, y) => x.index - y.index || (x.serial < y.serial ? -1 : 1));
    for (let i = 1; i < byIndex.length; i++) expect(byIndex[i]!.serial).toBeGreaterThan(byIndex[i - 1]!.serial);
    for (const wave of waves) {
      const serials = wave.map((l) => l.serial);
      expect([...serials].sort((x, y) => (x < y ? -1 : 1))).toEqual(serials);
    }
    const commits = servers.reduce((n, s) => n + s.ca.serials.commits, 0);
    expect(commits).toBeLessThan(900); // batched: leaves asked for meanwhile share a commit
  });

  it('lets one of two concurrent rotations through; the other gets a conflict; every agent sees the new roots', async () => {
    const prefix = freshPrefix();
    const [a, b] = await Promise.all([startServer(prefix), startServer(prefix)]);
    const client = await startClient(prefix);
    const oldRoot = a.ca.roots().activeRootId;
    const rootsChanged = new Promise<void>((resolve) => client.store.watchOnce({ table: ROOTS_TABLE }, resolve));
    const update = (bits: number) => ({
      provider: 'consul',
      config: { PrivateKeyType: 'ec', PrivateKeyBits: bits },
      state: null,
      forceWithoutCrossSigning: false,
    });
    const results = await Promise.allSettled([
      a.ca.updateConfiguration(update(384)),
      b.ca.updateConfiguration(update(384)),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')!;
    expect(rejected.reason).toMatchObject({ code: 'CA_CONFIG_CONFLICT', kind: 'conflict' });
    await rootsChanged;
    for (const agent of [a, b, client]) {
      const roots = agent.ca.roots();
      expect(roots.roots).toHaveLength(2);
      expect(roots.activeRootId).not.toBe(oldRoot);
    }
    // One key per root: the old and the winner's new one; the loser's was dropped.
    expect(await privateKeys(prefix)).toHaveLength(2);
    const leaf = await b.ca.signLeaf('default', 'web');
    expect(leaf.signingKeyId).toBe(b.ca.roots().roots.find((r) => r.value.Active)!.value.SigningKeyID);
  });

  it('has a client agent leaf signed by a server; it verifies against the servers roots and completes mutual TLS with a server leaf', async () => {
    const prefix = freshPrefix();
    const server = await startServer(prefix);
    const client = await startClient(prefix);
    const fromClient = await client.ca.signLeaf('default', 'web');
    const fromServer = await server.ca.signLeaf('default', 'api');
    expect(fromClient.uri).toBe(`spiffe://${server.ca.trustDomain}/ns/default/dc/dc1/svc/web`);
    const root = new X509Certificate(rootsOf(server)[0]!);
    expect(new X509Certificate(fromClient.certPem).verify(root.publicKey)).toBe(true);
    expect(
      new X509Certificate(fromClient.certPem).checkPrivateKey(
        await import('node:crypto').then((c) => c.createPrivateKey(fromClient.privateKeyPem)),
      ),
    ).toBe(true);
    expect(client.ca.roots().activeRootId).toBe(server.ca.roots().activeRootId);
    const seen = await handshake(apiLeaf(fromServer), rootsOf(server), apiLeaf(fromClient), rootsOf(client));
    expect(seen).toEqual({ serverSaw: fromClient.uri, clientSaw: fromServer.uri, echoed: 'ping' });
    // The client cannot change the CA, and has no key to lose.
    await expect(
      client.ca.updateConfiguration({ provider: 'consul', config: {}, state: null, forceWithoutCrossSigning: false }),
    ).rejects.toMatchObject({ code: 'CA_SERVER_ONLY' });
  });

  it('fails a client agent leaf with a clear 5xx when no server answers', async () => {
    const prefix = freshPrefix();
    const server = await startServer(prefix);
    await server.ca.signLeaf('default', 'warm');
    // Only the view and the client: the server agent is gone (its signing mailbox closed).
    for (const fn of cleanups.splice(0).reverse()) await fn();
    const client = await startClient(prefix, 300);
    await expect(client.ca.signLeaf('default', 'web')).rejects.toMatchObject({
      code: 'CA_NO_SERVER',
      kind: 'unavailable',
    });
  });

  it('fails a client agent leaf with CA_NO_SERVER while etcd is down, and signs again once it is back', async () => {
    const prefix = freshPrefix();
    await startServer(prefix);
    const client = await startClient(prefix, 1_000);
    await client.ca.signLeaf('default', 'warm');
    const member = cluster.members[0]!;
    await member.kill();
    try {
      await expect(client.ca.signLeaf('default', 'web')).rejects.toMatchObject({
        code: 'CA_NO_SERVER',
        kind: 'unavailable',
      });
      // The roots stay readable from the view.
      expect(client.ca.roots().roots).toHaveLength(1);
    } finally {
      await member.start();
    }
    // "Back" is once the server's signing watch has reconnected (its backoff), not the moment etcd
    // answers again: ask until a server answers, each try bounded by the client's own deadline.
    await expect(signOnceServed(() => client.ca.signLeaf('default', 'web'))).resolves.toMatchObject({
      uri: expect.stringContaining('/svc/web'),
    });
  }, 90_000);
});

/**
 * The first signing a server answers; only CA_NO_SERVER (etcd not yet used again, or no server
 * listening yet) is asked again, a pause apart: a failing try is instant while the client still
 * skips the member it saw go (up to 1.5 s), so a count of tries alone would not wait for anything.
 */
async function signOnceServed(sign: () => Promise<IssuedLeaf>): Promise<IssuedLeaf> {
  const giveUpAt = Date.now() + 60_000;
  for (;;) {
    try {
      return await sign();
    } catch (err) {
      if ((err as { code?: unknown }).code !== 'CA_NO_SERVER' || Date.now() > giveUpAt) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** A leaf as the shared mutual-TLS helper takes it (the agent API's field names). */
function apiLeaf(leaf: IssuedLeaf): LeafKeys {
  return { CertPEM: leaf.certPem, PrivateKeyPEM: leaf.privateKeyPem, ServiceURI: leaf.uri };
}
