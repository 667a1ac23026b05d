// The one place ACLs are enforced for HTTP: each route method's declared requirement is checked
// here before its handler runs, so no endpoint can forget its check. A method with a parse phase
// is parsed first, once, and the parsed value goes to its ACL function and its handler.
import { aclDisabled } from '../acl/errors.js';
import { requirePermission, type Identity } from '../acl/identity.js';
import type { ApiRequest } from './request.js';
import type { AclRequirement, MethodSpec, Outcome, ParsedMethodSpec, RequestHandler } from './route-types.js';

export interface AclGate {
  readonly enabled: boolean;
  /** Resolves the request's effective token; throws `ACL not found` for an unknown one. */
  identify(req: ApiRequest): Identity;
  /** Handed to 'none' handlers: it allows nothing, so a misuse fails closed. */
  readonly unresolved: Identity;
}

const noParse = (): undefined => undefined;

/**
 * The order of every request: (ACL API routes) 401 while ACLs are off → parse (its 400s) → the
 * ACL requirement (the token resolved, the permission checked: 403s) → the handler.
 */
export function guard<P>(spec: MethodSpec | ParsedMethodSpec<P>, gate: AclGate, aclApi: boolean): RequestHandler {
  const checked =
    spec.parse === undefined
      ? enforce<undefined>({ parse: noParse, acl: spec.acl, handler: spec.handler }, gate)
      : enforce(spec, gate);
  if (!aclApi) return checked;
  return (req) => {
    if (!gate.enabled) throw aclDisabled();
    return checked(req);
  };
}

function enforce<P>(spec: ParsedMethodSpec<P>, gate: AclGate): RequestHandler {
  const { parse, acl, handler } = spec;
  const run = (req: ApiRequest, requirement: AclRequirement, parsed: P): Outcome => {
    if (requirement === 'none') return handler(req, gate.unresolved, parsed);
    const identity = gate.identify(req);
    if (requirement !== 'resolved')
      requirePermission(identity, requirement.resource, requirement.access, requirement.name?.(req));
    return handler(req, identity, parsed);
  };
  if (typeof acl === 'function') {
    return (req) => {
      const parsed = parse(req);
      return run(req, acl(req, parsed), parsed);
    };
  }
  return (req) => run(req, acl, parse(req));
}
