// The etcd parts behind a cluster agent's token secrets (src/acl/cluster-secrets.ts, docs/cluster-security.md):
// a server opens etcd's private range, where the secrets are kept, and answers the mailbox
// `<prefix>sign/acl/`; a client agent opens the mailbox only and never the private range.
import type { Logger } from '../core/log.js';
import { openEtcdPrivateRange, openEtcdMailbox, type EtcdConnection } from '../state/etcd/index.js';

export interface ClusterSecretParts {
  /** A server's only. */
  readonly range: ReturnType<typeof openEtcdPrivateRange> | undefined;
  readonly mailbox: ReturnType<typeof openEtcdMailbox>;
  close(): void;
}

export function openClusterSecretParts(o: {
  etcd: () => EtcdConnection;
  prefix: string;
  log: Logger;
  server: boolean;
}): ClusterSecretParts {
  const mailbox = openEtcdMailbox({ etcd: { shared: o.etcd() }, prefix: o.prefix, log: o.log, mailbox: 'acl' });
  const range = o.server ? openEtcdPrivateRange({ etcd: { shared: o.etcd() }, prefix: o.prefix }) : undefined;
  return {
    range,
    mailbox,
    close: () => {
      mailbox.close();
      range?.close();
    },
  };
}
