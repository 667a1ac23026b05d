// Cluster mode's parts, opened together from the config: the etcd-backed store, this agent's member
// record with the member list, and the leadership probe, all on one etcd client (HTTP/2 streams: a
// slow commit never holds up a keepalive or a probe), whose handles the CA's parts share too.
import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';
import type { AgentConfig } from '../config/types.js';
import type { Clock } from '../core/clock.js';
import type { Logger } from '../core/log.js';
import type { Counter } from '../core/metrics.js';
import type { TableSchemas } from '../state/types.js';
import {
  connectEtcd,
  etcdFailure,
  openEtcdStore,
  shareConnection,
  type EtcdConnection,
  type EtcdConnectionOptions,
  type EtcdStore,
} from '../state/etcd/index.js';
import { EtcdLeadership, type RaftServer } from './leadership.js';
import { ClusterMembers, type MemberRecord } from './members.js';

export interface ClusterState {
  readonly store: EtcdStore;
  readonly leadership: EtcdLeadership;
  readonly members: ClusterMembers;
  /** A handle on the agent's one etcd client, for the CA's parts; each closes its own. */
  readonly connection: () => EtcdConnection;
  /** What /v1/agent/members and /v1/status read. */
  readonly routes: {
    members(): readonly MemberRecord[];
    leader(): Promise<string>;
    peers(): Promise<string[]>;
    raftServers(): Promise<RaftServer[]>;
  };
  /** Records the HTTP port the agent bound (known only once it listens). */
  listening(port: number): Promise<void>;
  /** Removes the member record and stops probing; the store is closed by its owner. */
  close(): Promise<void>;
}

export interface ClusterDeps {
  readonly log: Logger;
  readonly clock: Clock;
  readonly random: () => number;
  /** Tables kept out of every agent's view and read through from etcd (docs/decisions.md D15). */
  readonly readThroughTables: readonly string[];
  /** Each table's row schema, and the counter of rows read from etcd that fail theirs (docs/cluster-security.md#bad-rows). */
  readonly tableSchemas: TableSchemas;
  readonly badRows: Counter;
}

/** The etcd connection settings of the config, with the TLS files read. */
function etcdConnectionOptions(config: AgentConfig): EtcdConnectionOptions {
  const etcd = config.cluster.etcd;
  const read = (path: string | undefined): Buffer | undefined => (path === undefined ? undefined : readFileSync(path));
  const ca = read(etcd.tls.caFile);
  const cert = read(etcd.tls.certFile);
  const key = read(etcd.tls.keyFile);
  return {
    endpoints: etcd.endpoints,
    auth:
      etcd.username === undefined || etcd.password === undefined
        ? undefined
        : { username: etcd.username, password: etcd.password },
    // A client certificate without a CA file trusts the system's roots, as https:// alone does.
    tls:
      ca === undefined && cert === undefined
        ? undefined
        : { ca: ca ?? Buffer.from(rootCertificates.join('\n')), cert, key },
  };
}

export async function openClusterState(
  config: AgentConfig,
  self: MemberRecord,
  deps: ClusterDeps,
): Promise<ClusterState> {
  const etcdLog = deps.log.child({ component: 'etcd' });
  const handles = shareConnection(connectEtcd({ ...etcdConnectionOptions(config), log: etcdLog, random: deps.random }));
  const log = deps.log.child({ component: 'cluster' });
  const store = await openEtcdStore({
    etcd: { shared: handles() },
    prefix: config.cluster.etcd.prefix,
    log: deps.log,
    clock: deps.clock,
    random: deps.random,
    dataDir: config.dataDir,
    readThroughTables: deps.readThroughTables,
    tableSchemas: deps.tableSchemas,
    badRows: deps.badRows,
  });
  const connection = handles();
  // A store started from its view on disk has not heard from etcd: neither has the probe.
  const lastContact = store.health.connected ? undefined : store.health.lastContact;
  const leadership = new EtcdLeadership({
    connection,
    clock: deps.clock,
    log,
    random: deps.random,
    intervalMs: config.cluster.leaderProbeIntervalMs,
    lastContact,
  });
  const members = new ClusterMembers({
    connection,
    prefix: config.cluster.etcd.prefix,
    ttlMs: config.cluster.memberTtlMs,
    clock: deps.clock,
    log,
    random: deps.random,
    badRows: deps.badRows,
  });
  /** etcd's space quota spent: the agent serves, and its registration loop puts the record once etcd takes writes. */
  const registerLater = (err: unknown, record: MemberRecord): void => {
    const failure = etcdFailure(err);
    // 'unavailable': the lease grant went through etcd3's own policy, not the client's retries, and
    // failed at once while a lone member was being probed after another call timed out (seen at
    // start-up on a loaded host, bench/scale/); the view was just read, so the loop registers it soon.
    if (failure !== 'no-space' && failure !== 'unavailable') throw err;
    log.info(
      {},
      failure === 'no-space'
        ? 'etcd takes no writes (its NOSPACE alarm): this member is registered once it does'
        : 'etcd did not take this member entry in time: it is registered once etcd answers',
    );
    members.startLater(record);
  };
  try {
    await leadership.start();
    // A store started from its view on disk (etcd unreachable) must not wait for etcd to register,
    // nor an agent whose etcd takes no writes (its space quota spent): each serves and registers later.
    if (store.health.connected) await members.start(self).catch((err: unknown) => registerLater(err, self));
    else members.startLater(self);
  } catch (err) {
    leadership.close();
    await members.close();
    connection.close();
    await store.close();
    throw err;
  }
  log.info({ member: self.name, server: self.server }, 'joined the cluster');
  let current = self;
  return {
    store,
    leadership,
    members,
    connection: handles,
    routes: {
      members: () => members.list(),
      leader: () => leadership.leader(),
      peers: () => leadership.peers(),
      raftServers: () => leadership.raftServers(),
    },
    async listening(port) {
      if (port === current.port) return;
      current = { ...current, port };
      await members.update(current).catch((err: unknown) => {
        // Started from the view on disk, etcd down: the registration loop puts this port once etcd answers.
        if (store.health.connected) return registerLater(err, current);
        log.warn({ err }, 'etcd unreachable: this member is registered once it answers');
      });
    },
    async close() {
      leadership.close();
      await members.close();
      connection.close();
    },
  };
}
