// The CA of a cluster agent (docs/cluster-security.md), wired from etcd's parts; the composition
// root picks the role once. A server keeps CA keys in etcd's private range, which the shared view
// never holds, and signs the leaves client agents ask for over the signing mailbox; a client
// generates its leaf keys locally and has their public keys signed by a server.
import type { CertificateAuthority } from '../connect/ca/authority.js';
import { CaRecords } from '../connect/ca/ca-records.js';
import { ClientCa } from '../connect/ca/client-ca.js';
import { ClusterKeyStore } from '../connect/ca/cluster-key-store.js';
import { sharedCustody } from '../connect/ca/custody.js';
import { RemoteLeafSource, serveSigningRequests, type LeafAuthorizer } from '../connect/ca/remote-signer.js';
import { ServerCa, type ServerCaOptions } from '../connect/ca/server-ca.js';
import type { KeyGenerator } from '../connect/ca/signer.js';
import { openEtcdPrivateRange, openEtcdMailbox, type EtcdConnection } from '../state/etcd/index.js';

export interface ClusterCaOptions extends Omit<ServerCaOptions, 'custody'> {
  /** A handle on the agent's etcd client (one per part: each closes its own). */
  readonly etcd: () => EtcdConnection;
  readonly prefix: string;
  readonly node: string;
}

export interface ClusterServerCaOptions extends ClusterCaOptions {
  /** A server checks each signing request's caller with its own ACLs (docs/decisions.md D24). */
  readonly authorizeLeaf: LeafAuthorizer;
}

export interface ClusterClientCaOptions extends ClusterCaOptions {
  /** The agent's signing pool: a client's leaf keys are made off the event loop there. */
  readonly keys: KeyGenerator;
  /** Whether the member list holds a live server agent (none: a leaf fails at once). */
  readonly serverKnown: () => boolean;
}

export interface ClusterCa {
  readonly ca: CertificateAuthority;
  /** Closes the CA and the etcd parts it was wired with. */
  close(): void;
}

/** A server agent's: the key in etcd's private range, and it answers client agents' signing requests. */
export async function openClusterServerCa(o: ClusterServerCaOptions): Promise<ClusterCa> {
  const channel = openEtcdMailbox({ etcd: { shared: o.etcd() }, prefix: o.prefix, log: o.log });
  const keysRange = openEtcdPrivateRange({ etcd: { shared: o.etcd() }, prefix: o.prefix });
  const closeParts = (): void => {
    channel.close();
    keysRange.close();
  };
  let ca: ServerCa;
  try {
    ca = await ServerCa.open({ ...o, custody: sharedCustody(o.store, new ClusterKeyStore(keysRange)) });
  } catch (err) {
    closeParts();
    throw err;
  }
  // Answers signing requests only once its CA is open.
  serveSigningRequests(channel, ca, { datacenter: o.datacenter, log: o.log, authorize: o.authorizeLeaf });
  return {
    ca,
    close: () => {
      ca.close();
      closeParts();
    },
  };
}

/** A client agent's: no key; a server signs its leaves over the signing mailbox. */
export function openClusterClientCa(o: ClusterClientCaOptions): ClusterCa {
  const channel = openEtcdMailbox({ etcd: { shared: o.etcd() }, prefix: o.prefix, log: o.log });
  const records = new CaRecords(o.store, o.clock);
  const rootsIndex = (): number => records.rootsIndex();
  const remote = new RemoteLeafSource({
    channel,
    datacenter: o.datacenter,
    node: o.node,
    keys: o.keys,
    rootsIndex,
    serverKnown: o.serverKnown,
  });
  const ca = new ClientCa(records, remote);
  return {
    ca,
    close: () => {
      ca.close();
      channel.close();
    },
  };
}
