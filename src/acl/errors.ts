// ACL errors with Consul's exact texts (docs/decisions.md#acl-error-texts): clients match on
// "Permission denied" and "ACL not found", so these strings are part of the API.
import { agentError, type AgentError } from '../core/errors.js';
import type { Access, Resource } from './types.js';

export function aclNotFound(): AgentError {
  return agentError('ACL_NOT_FOUND');
}

export function aclDisabled(): AgentError {
  return agentError('ACL_DISABLED');
}

export interface DeniedSubject {
  readonly accessorId: string;
  readonly anonymous: boolean;
}

/** `Permission denied: token with AccessorID '…' lacks permission 'service:write' on "db"`. */
export function permissionDenied(
  subject: DeniedSubject,
  resource: Resource,
  access: Access,
  name?: string,
): AgentError {
  const who = subject.anonymous ? 'anonymous token' : `token with AccessorID '${subject.accessorId}'`;
  let reason = `${who} lacks permission '${resource}:${access}'`;
  if (name !== undefined) reason += ` on ${JSON.stringify(name)}`;
  if (subject.anonymous) reason += '. The anonymous token is used implicitly when a request does not specify a token.';
  return agentError('ACL_PERMISSION_DENIED', { reason });
}
