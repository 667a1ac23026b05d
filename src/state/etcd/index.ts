// The etcd store's public entry: all that the rest of the agent (src/cluster/, the composition root)
// may use of src/state/etcd/; its other files are internals (.dependency-cruiser.cjs).
export {
  connectEtcd,
  shareConnection,
  type EtcdConnection,
  type EtcdConnectionOptions,
  type EtcdKeyValue,
  type EtcdLeasedKey,
  type EtcdMember,
  type EtcdStatus,
  type EtcdWatch,
  type EtcdWatchListener,
} from './etcd-client.js';
export { DEFAULT_ETCD_PREFIX, openEtcdStore, type EtcdStore, type EtcdStoreOptions } from './etcd-store.js';
export { openEtcdPrivateRange, type EtcdPrivateRange } from './etcd-private.js';
export { openEtcdSignChannel, type EtcdSignChannel } from './etcd-sign-channel.js';
export { ETCD_VIEW_DIR } from './etcd-view-file.js';
