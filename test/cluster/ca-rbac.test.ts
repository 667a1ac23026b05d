// etcd's RBAC as docs/cluster-security.md sets it up (the same etcdctl commands): a server agent
// (role svc-server) holds and reads the CA key under `<prefix>private/`; a client agent (role
// svc-client) reads the shared view and KV, has its leaves signed through `<prefix>sign/`, and etcd
// refuses it the key range, whatever it asks.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServerCa } from '../../src/connect/ca/server-ca.js';
import { CaRecords } from '../../src/connect/ca/ca-records.js';
import { ClientCa } from '../../src/connect/ca/client-ca.js';
import { ClusterKeyStore } from '../../src/connect/ca/cluster-key-store.js';
import { sharedCustody } from '../../src/connect/ca/custody.js';
import { RemoteLeafSource, serveSigningRequests } from '../../src/connect/ca/remote-signer.js';
import { LocalSigner } from '../../src/connect/ca/signer.js';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/log.js';
import {
  connectEtcd,
  type EtcdConnectionOptions,
  openEtcdPrivateRange,
  openEtcdMailbox,
  openEtcdStore,
} from '../../src/state/etcd/index.js';
import { ensureEtcd, startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { clientUser, enableDocumentedRbac } from '../support/etcd-rbac.js';
import { DEFAULT_CA } from '../unit/connect/ca/support.js';

const PREFIX = '/svc/';
let cluster: EtcdCluster;
let etcdctl: string | undefined;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  const candidate = join(dirname(await ensureEtcd()), 'etcdctl');
  etcdctl = existsSync(candidate) ? candidate : undefined;
  cluster = await startEtcdCluster({ size: 1 });
}, 180_000);
afterAll(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
  await cluster?.stop();
});

const as = (username: string): EtcdConnectionOptions => ({
  endpoints: cluster.endpoints,
  auth: { username, password: `${username}-pw` },
});

describe('etcd RBAC keeps the CA key on the servers', () => {
  it.skipIf(!existsSync('/usr/bin/etcdctl') && etcdctl === undefined)(
    'serves a client agent without ever letting it read private/',
    async () => {
      // docs/cluster-security.md, verbatim but for the passwords.
      await enableDocumentedRbac(cluster, etcdctl as string, PREFIX);

      const serverStore = await openEtcdStore({
        etcd: as('svc-server-1'),
        prefix: PREFIX,
        log: silentLogger,
        readThroughTables: ['kv'],
      });
      cleanups.push(() => serverStore.close());
      const range = openEtcdPrivateRange({ etcd: as('svc-server-1'), prefix: PREFIX });
      cleanups.push(() => range.close());
      const server = await ServerCa.open({
        store: serverStore,
        signer: new LocalSigner(),
        clock: systemClock,
        random: Math.random,
        log: silentLogger,
        datacenter: 'dc1',
        bootstrap: DEFAULT_CA,
        custody: sharedCustody(serverStore, new ClusterKeyStore(range)),
      });
      cleanups.push(() => server.close());
      const serverChannel = openEtcdMailbox({ etcd: as('svc-server-1'), prefix: PREFIX, log: silentLogger });
      cleanups.push(() => serverChannel.close());
      serveSigningRequests(serverChannel, server, { datacenter: 'dc1', log: silentLogger, authorize: () => undefined });

      // The client's view (a read and a watch of [data/, meta0)), its KV (bulk/) and its signing
      // channel work under svc-client.
      const clientStore = await openEtcdStore({
        etcd: as(clientUser('client-1')),
        prefix: PREFIX,
        log: silentLogger,
        readThroughTables: ['kv'],
      });
      cleanups.push(() => clientStore.close());
      // KV is read through with the client's user; only a server writes it (docs/decisions.md D25).
      const kvRow = { op: 'set', table: 'kv', key: 'app/config', value: { Flags: 0, Value: null } } as const;
      await expect(clientStore.commit([kvRow])).rejects.toThrow(/permission denied/);
      await serverStore.commit([kvRow]);
      expect((await clientStore.read({ table: 'kv', prefix: 'app/' }, 'default')).rows).toHaveLength(1);
      const clientChannel = openEtcdMailbox({
        etcd: as(clientUser('client-1')),
        prefix: PREFIX,
        log: silentLogger,
      });
      cleanups.push(() => clientChannel.close());
      const remote = new RemoteLeafSource({
        channel: clientChannel,
        datacenter: 'dc1',
        node: 'client-1',
        keys: new LocalSigner(),
      });
      const client = new ClientCa(new CaRecords(clientStore, systemClock), remote);
      cleanups.push(() => client.close());

      const leaf = await client.signLeaf('default', 'web');
      const root = new X509Certificate(client.roots().roots[0]!.value.RootCert);
      expect(new X509Certificate(leaf.certPem).verify(root.publicKey)).toBe(true);

      // With the client's credentials, etcd refuses the key range, by key and by prefix.
      const keyPath = `${PREFIX}private/ca/keys/${client.roots().activeRootId}`;
      const stolen = openEtcdPrivateRange({ etcd: as(clientUser('client-1')), prefix: PREFIX });
      cleanups.push(() => stolen.close());
      await expect(stolen.get(`ca/keys/${client.roots().activeRootId}`)).rejects.toThrow(/permission denied/);
      const raw = connectEtcd(as(clientUser('client-1')));
      cleanups.push(() => raw.close());
      await expect(raw.getKey(Buffer.from(keyPath), 5_000)).rejects.toThrow(/permission denied/);
      await expect(raw.rangePrefix(Buffer.from(PREFIX), 5_000)).rejects.toThrow(/permission denied/);
      // The server reads it.
      expect(await range.get(`ca/keys/${client.roots().activeRootId}`)).toMatchObject({
        RootID: client.roots().activeRootId,
      });
    },
  );
});
