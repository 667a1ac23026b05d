// The CA's parts on a cluster agent (docs/cluster-security.md): a server keeps CA keys in etcd's
// private range, which the shared view never holds, and signs the leaves client agents ask for; a
// client generates its leaf keys locally and has their public keys signed by a server.
import type { Logger } from '../../core/log.js';
import type { EtcdConnection } from '../../state/etcd/etcd-client.js';
import { openEtcdPrivateRange } from '../../state/etcd/etcd-private.js';
import { openEtcdSignChannel } from '../../state/etcd/etcd-sign-channel.js';
import type { CaManager, CaManagerOptions } from './ca-manager.js';
import { EtcdKeyStore } from './etcd-key-store.js';
import { RemoteLeafSource, serveSigningRequests } from './remote-signer.js';
import type { KeyGenerator } from './signer.js';

export interface ClusterCaOptions {
  /** A handle on the agent's etcd client (one per part: each closes its own). */
  readonly etcd: () => EtcdConnection;
  readonly prefix: string;
  /** A server holds the CA key and signs; a client never reads the key. */
  readonly server: boolean;
  readonly datacenter: string;
  readonly node: string;
  /** The agent's signing pool: a client's leaf keys are made off the event loop there. */
  readonly keys: KeyGenerator;
  /** A client's roots index, sent with each signing request (remote-signer.ts). */
  readonly rootsIndex: () => number;
  readonly log: Logger;
}

export interface ClusterCa {
  /** What CaManager.open needs on this agent's role. */
  readonly managerOptions: Pick<CaManagerOptions, 'keys' | 'role' | 'remote'>;
  /** A server starts answering signing requests once its CA is open. */
  serve(ca: CaManager): void;
  close(): void;
}

export function clusterCa(o: ClusterCaOptions): ClusterCa {
  const channel = openEtcdSignChannel({ etcd: { shared: o.etcd() }, prefix: o.prefix, log: o.log });
  if (!o.server) {
    const remote = new RemoteLeafSource({ channel, datacenter: o.datacenter, node: o.node, keys: o.keys, rootsIndex: o.rootsIndex });
    return { managerOptions: { role: 'client', remote }, serve: () => {}, close: () => channel.close() };
  }
  const keysRange = openEtcdPrivateRange({ etcd: { shared: o.etcd() }, prefix: o.prefix });
  return {
    managerOptions: { role: 'server', keys: new EtcdKeyStore(keysRange) },
    serve: (ca) => serveSigningRequests(channel, ca, { datacenter: o.datacenter, log: o.log }),
    close: () => {
      channel.close();
      keysRange.close();
    },
  };
}
