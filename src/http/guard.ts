// The one place ACLs are enforced for HTTP: each route method's declared requirement is checked
// here before its handler runs (issue: "a single mechanism that each route declares").
import { aclDisabled } from '../acl/errors.js';
import { requirePermission, type Identity } from '../acl/identity.js';
import type { ApiRequest } from './request.js';
import type { AclRequirement, MethodSpec, Outcome, RequestHandler } from './routes.js';

export interface AclGate {
  readonly enabled: boolean;
  /** Resolves the request's effective token; throws `ACL not found` for an unknown one. */
  identify(req: ApiRequest): Identity;
  /** Handed to 'none' handlers: it allows nothing, so a misuse fails closed. */
  readonly unresolved: Identity;
}

export function guard(spec: MethodSpec, gate: AclGate, aclApi: boolean): RequestHandler {
  const { handler, acl } = spec;
  const run = (req: ApiRequest, requirement: AclRequirement): Outcome => {
    if (requirement === 'none') return handler(req, gate.unresolved);
    const identity = gate.identify(req);
    if (requirement !== 'resolved') requirePermission(identity, requirement.resource, requirement.access, requirement.name?.(req));
    return handler(req, identity);
  };
  if (aclApi) {
    return (req) => {
      if (!gate.enabled) throw aclDisabled();
      return run(req, typeof acl === 'function' ? acl(req) : acl);
    };
  }
  if (typeof acl === 'function') return (req) => run(req, acl(req));
  return (req) => run(req, acl);
}
