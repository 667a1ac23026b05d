// Where token secrets live (docs/decisions.md D23). On one machine a token's row holds its SecretID,
// as it always has. In a cluster the shared view, which every agent reads and watches, holds only
// the SHA-256 of each secret (enough to resolve a token presented to any agent); the secret itself
// is kept where only server agents read (`<prefix>private/acl/secrets/`), and an answer that shows
// a secret gets it from there: directly on a server, through a server on a client agent.
import { createHash } from 'node:crypto';
import type { StoredToken } from './model.js';

/** The view's stand-in for a secret: random 122-bit secrets need no slow hash (docs/decisions.md D23). */
export function secretHash(secret: string): string {
  return createHash('sha256').update(secret).digest('base64');
}

/** The hash a token resolves by, whichever way its row keeps the secret. */
export function tokenSecretHash(token: StoredToken): string {
  return token.SecretHash ?? secretHash(token.SecretID ?? '');
}

export interface TokenSecrets {
  /** True: rows carry the SecretID itself (one machine); false: rows carry its SecretHash only (a cluster). */
  readonly inRow: boolean;
  /** Records a new token's secret once its row is committed at `index` (a no-op when the row holds it). */
  keep(accessorId: string, secret: string, index: number): Promise<void>;
  /**
   * The secrets of these tokens for a caller with acl:write, whose own secret a server checks
   * again; an accessor whose secret is not recorded is left out.
   */
  reveal(accessorIds: readonly string[], callerSecret: string): Promise<ReadonlyMap<string, string>>;
}

/** One machine: the secret is in the row, and nothing else keeps it. */
export const SECRETS_IN_ROW: TokenSecrets = Object.freeze({
  inRow: true,
  keep: () => Promise.resolve(),
  reveal: () => Promise.resolve(new Map<string, string>()),
});
