// ACL errors with Consul's exact texts (docs/decisions.md#acl-error-texts): clients match on
// "Permission denied" and "ACL not found", so these strings are part of the API.
import { AgentError } from '../core/errors.js';
import type { Access, Resource } from './types.js';

export const ACL_NOT_FOUND = 'ACL not found';

export function aclNotFound(): AgentError {
  return new AgentError('ACL_NOT_FOUND', 'permission-denied', ACL_NOT_FOUND);
}

export function aclDisabled(): AgentError {
  return new AgentError('ACL_DISABLED', 'unauthorized', 'ACL support disabled');
}

export interface DeniedSubject {
  readonly accessorId: string;
  readonly anonymous: boolean;
}

/** `Permission denied: token with AccessorID '…' lacks permission 'service:write' on "db"`. */
export function permissionDenied(subject: DeniedSubject, resource: Resource, access: Access, name?: string): AgentError {
  const who = subject.anonymous ? 'anonymous token' : `token with AccessorID '${subject.accessorId}'`;
  let message = `Permission denied: ${who} lacks permission '${resource}:${access}'`;
  if (name !== undefined) message += ` on ${JSON.stringify(name)}`;
  if (subject.anonymous) message += '. The anonymous token is used implicitly when a request does not specify a token.';
  return new AgentError('ACL_PERMISSION_DENIED', 'permission-denied', message);
}

/** A denial with only a cause: `Permission denied: <cause>`. */
export function deniedBecause(cause: string): AgentError {
  return new AgentError('ACL_PERMISSION_DENIED', 'permission-denied', `Permission denied: ${cause}`);
}
