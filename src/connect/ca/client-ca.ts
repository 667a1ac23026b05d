// A client agent's CA: it holds no CA key. It reads the CA's configuration and roots from the
// shared view and has a server sign its leaves (remote-signer.ts); it never changes the CA.
import { agentError } from '../../core/errors.js';
import type { Row } from '../../state/types.js';
import type { CertificateAuthority, ConfigurationUpdate, IssuedLeaf } from './authority.js';
import { notInitialized, type CaRecords } from './ca-records.js';
import type { StoredCaConfig } from './model.js';
import type { RootsSnapshot } from './roots-view.js';

/** Signs leaves elsewhere (remote-signer.ts): a client agent's source of leaves. */
export interface RemoteLeafSigner {
  signLeaf(namespace: string, service: string, token?: string): Promise<IssuedLeaf>;
}

export class ClientCa implements CertificateAuthority {
  constructor(
    private readonly records: CaRecords,
    private readonly remote: RemoteLeafSigner,
  ) {}

  rootsIndex(): number {
    return this.records.rootsIndex();
  }

  roots(): RootsSnapshot {
    return this.records.roots();
  }

  configuration(): Row<StoredCaConfig> {
    return this.records.configuration();
  }

  updateConfiguration(_update: ConfigurationUpdate): Promise<void> {
    return Promise.reject(agentError('CA_SERVER_ONLY'));
  }

  signLeaf(namespace: string, service: string, token?: string): Promise<IssuedLeaf> {
    // No server has made the CA yet: say so now rather than wait for a signer that cannot answer.
    if (!this.records.initialized()) return Promise.reject(notInitialized());
    return this.remote.signLeaf(namespace, service, token);
  }

  close(): void {
    // Holds nothing of its own: the signing mailbox belongs to whoever wired it.
  }
}
