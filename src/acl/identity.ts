// Who a request acts as once its token is resolved: the authorizer plus what messages and
// namespace resolution need to know about the token.
import { permissionDenied } from './errors.js';
import type { Access, Authorizer, Resource } from './types.js';

export interface Identity {
  readonly authorizer: Authorizer;
  readonly accessorId: string;
  readonly anonymous: boolean;
  /** The token's namespace (docs/decisions.md D2); step 4 of authorize's namespace resolution. */
  readonly namespace: string;
  /** The secret it was resolved from, for a server to check the caller again (a leaf, a secret shown); never logged. */
  readonly secret?: string | undefined;
}

/** Throws Consul's attributed denial unless the identity holds `access` on the resource. */
export function requirePermission(identity: Identity, resource: Resource, access: Access, name?: string): void {
  if (!identity.authorizer.allowed(resource, access, name)) throw permissionDenied(identity, resource, access, name);
}

const denyAll: Authorizer = Object.freeze({
  allowed: () => false,
  keyWritePrefix: () => false,
  anyAllowed: () => false,
  allAllowed: () => false,
  defaultAllow: false,
});

/** Handed to handlers whose route looks at no token: it allows nothing, so a misuse fails closed. */
export const UNRESOLVED_IDENTITY: Identity = Object.freeze({
  authorizer: denyAll,
  accessorId: '',
  anonymous: false,
  namespace: 'default',
});
