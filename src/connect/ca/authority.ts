// What the HTTP layer and the leaf manager use of the agent's CA, whichever role the agent has: a
// server CA (server-ca.ts) holds the key and signs; a client CA (client-ca.ts) has a server sign.
// The composition root picks one at start-up; nothing asks the role again.
import type { Row } from '../../state/types.js';
import type { StoredCaConfig } from './model.js';
import type { RootsSnapshot } from './roots-view.js';

/** A freshly signed leaf, as the leaf manager caches it. */
export interface IssuedLeaf {
  readonly serial: bigint;
  /** Colon-hex serial, as the API shows it. */
  readonly serialNumber: string;
  /** The leaf followed by the active root's intermediates. */
  readonly certPem: string;
  readonly privateKeyPem: string;
  readonly uri: string;
  readonly validAfter: number;
  readonly validBefore: number;
  /** The index of the commit that recorded this signing (its CreateIndex and ModifyIndex). */
  readonly index: number;
  /** The key ID of the CA that signed it (the leaf's AKI), colon-hex. */
  readonly signingKeyId: string;
}

/** The body of PUT /v1/connect/ca/configuration, decoded. */
export interface ConfigurationUpdate {
  readonly provider: string;
  readonly config: Readonly<Record<string, unknown>>;
  readonly state: unknown;
  readonly forceWithoutCrossSigning: boolean;
}

export interface CertificateAuthority {
  /** The roots' own index: the roots table's. */
  rootsIndex(): number;
  /** The current roots, rebuilt only when the roots table changed. Throws if the store does. */
  roots(): RootsSnapshot;
  /** The stored configuration row (GET /v1/connect/ca/configuration). */
  configuration(): Row<StoredCaConfig>;
  /** PUT /v1/connect/ca/configuration (a client agent answers CA_SERVER_ONLY). */
  updateConfiguration(update: ConfigurationUpdate): Promise<void>;
  /**
   * A leaf for a service of this agent: signed here (a server; the HTTP layer checked the caller) or
   * by a server (a client), which checks `token` for service:write again (docs/decisions.md D24).
   */
  signLeaf(namespace: string, service: string, token?: string): Promise<IssuedLeaf>;
  close(): void;
}
