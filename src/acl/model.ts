// ACL tokens and policies as the state store keeps them, and their API shapes in Consul's key order
// (docs/decisions.md#acl-api). Tokens store policy IDs only; names are filled in on read, and links
// to deleted policies drop out. Policies store their parsed rules beside the text, so a policy is
// parsed once (when written) and compiled synchronously afterwards.
import type { NodeIdentity, ServiceIdentity } from './rules/identities.js';
import type { ParsedRules } from './rules/parse.js';

export const ACL_TOKENS = 'acl-tokens';
export const ACL_POLICIES = 'acl-policies';
/** Singletons such as the bootstrap marker. */
export const ACL_META = 'acl-meta';
export const BOOTSTRAP_KEY = 'bootstrap';

export const HIDDEN_SECRET = '<hidden>';

export interface PolicyLink {
  readonly ID: string;
}

/** Declared beside the rules they expand to; a token stores them as they are. */
export type { NodeIdentity, ServiceIdentity } from './rules/identities.js';

export interface StoredToken {
  readonly AccessorID: string;
  /** The secret itself: only on one machine (the embedded store). */
  readonly SecretID?: string;
  /** Its SHA-256 instead, in a cluster's shared view (src/acl/secrets.ts, docs/decisions.md D23). */
  readonly SecretHash?: string;
  readonly Description: string;
  readonly Policies: readonly PolicyLink[];
  readonly ServiceIdentities: readonly ServiceIdentity[];
  readonly NodeIdentities: readonly NodeIdentity[];
  readonly Local: boolean;
  /** RFC 3339; absent for a token that never expires. */
  readonly ExpirationTime?: string;
  readonly CreateTime: string;
  readonly Hash: string;
  readonly Namespace: string;
}

export interface StoredPolicy {
  readonly ID: string;
  readonly Name: string;
  readonly Description: string;
  readonly Rules: string;
  readonly Datacenters: readonly string[] | null;
  readonly Hash: string;
  readonly Parsed: ParsedRules;
}
