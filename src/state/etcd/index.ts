// The etcd store's public entry: all that the rest of the agent (src/cluster/, the composition root)
// may use of src/state/etcd/; its other files are internals (.dependency-cruiser.cjs).
export {
  connectEtcd,
  etcdFailure,
  shareConnection,
  type EtcdConnection,
  type EtcdConnectionOptions,
  type EtcdKeyValue,
  type EtcdLeasedKey,
  type EtcdMember,
  type EtcdStatus,
  type EtcdTxn,
  type EtcdTxnResult,
  type EtcdWatch,
  type EtcdWatchListener,
} from './etcd-client.js';
export { openEtcdStore, type EtcdStore, type EtcdStoreOptions } from './etcd-store.js';
export { openEtcdPrivateRange } from './etcd-private.js';
export { openEtcdMailbox } from './etcd-mailbox.js';
export { ETCD_VIEW_DIR } from './etcd-view-file.js';
export { BadRows } from './row-check.js';
