// The etcd part behind client agents' writes (write-forwarding.ts, docs/decisions.md D25): the
// mailbox `<prefix>sign/writes/`. A client agent asks on it; a server agent answers it.
import type { Logger } from '../core/log.js';
import { openEtcdMailbox, type EtcdConnection } from '../state/etcd/index.js';
import type { Mailbox } from '../core/mailbox.js';

export function openWriteMailbox(o: {
  etcd: () => EtcdConnection;
  prefix: string;
  log: Logger;
}): Mailbox & { close(): void } {
  return openEtcdMailbox({
    etcd: { shared: o.etcd() },
    prefix: o.prefix,
    log: o.log,
    mailbox: 'writes',
    unreadableAnswer: 'CLUSTER_FORWARD_FAILED',
  });
}
