// The query options `?dc=` and `?peer=` (docs/decisions.md#datacenters). An agent serves its own
// datacenter and has no peers: on the endpoints whose Consul handler reads `dc`, another
// datacenter's name is Consul's 500 `No path to datacenter` (its servers find no route to forward
// to); on those that read `peer`, a peer's name is refused, as Consul refuses peering calls while
// peering is off. The check runs after a method's parse phase (a malformed body is still its 400,
// as Consul decodes before it forwards) and before its ACL check (Consul's servers check the token
// after forwarding), by wrapping the ACL rule each method declares: the route table keeps one
// enforcement point (guard.ts) and no handler has to remember the option.
import { agentError } from '../core/errors.js';
import type { ApiRequest } from './request.js';
import {
  parsedMethod,
  type AclRule,
  type Method,
  type MethodSpec,
  type ParsedMethod,
  type Route,
} from './route-types.js';

interface Scope {
  readonly dc: boolean;
  readonly peer: boolean;
}

const DC: Scope = { dc: true, peer: false };
const DC_AND_PEER: Scope = { dc: true, peer: true };

/**
 * The routes whose Consul handler reads `?dc` (s.parse, s.parseDC, parseSource in agent/*_endpoint.go),
 * and among them those that also read `?peer` (parsePeerName). Every other route ignores both, as
 * Consul's do: the agent's own endpoints, /v1/event/list, /v1/acl/bootstrap, the templated-policy reads, /v1/catalog/datacenters,
 * and catalog register and deregister (which take the datacenter from the body).
 */
const SCOPES: ReadonlyMap<string, Scope> = new Map([
  ...[
    '/v1/acl/auth-method',
    '/v1/acl/auth-method/',
    '/v1/acl/auth-methods',
    '/v1/acl/binding-rule',
    '/v1/acl/binding-rule/',
    '/v1/acl/binding-rules',
    '/v1/acl/login',
    '/v1/acl/logout',
    '/v1/acl/policies',
    '/v1/acl/policy',
    '/v1/acl/policy/',
    '/v1/acl/policy/name/',
    '/v1/acl/role',
    '/v1/acl/role/',
    '/v1/acl/role/name/',
    '/v1/acl/roles',
    '/v1/acl/token',
    '/v1/acl/token/',
    '/v1/acl/tokens',
    '/v1/agent/connect/ca/leaf/',
    '/v1/agent/connect/ca/roots',
    '/v1/catalog/connect/',
    '/v1/config',
    '/v1/config/',
    '/v1/connect/ca/configuration',
    '/v1/connect/ca/roots',
    '/v1/connect/intentions',
    '/v1/connect/intentions/',
    '/v1/connect/intentions/check',
    '/v1/connect/intentions/exact',
    '/v1/connect/intentions/match',
    '/v1/event/fire/',
    '/v1/health/state/',
    '/v1/kv/',
    '/v1/operator/raft/configuration',
    '/v1/session/create',
    '/v1/session/destroy/',
    '/v1/session/info/',
    '/v1/session/list',
    '/v1/session/node/',
    '/v1/session/renew/',
    '/v1/snapshot',
    '/v1/status/leader',
    '/v1/status/peers',
    '/v1/txn',
  ].map((path) => [path, DC] as const),
  ...[
    '/v1/catalog/node-services/',
    '/v1/catalog/node/',
    '/v1/catalog/nodes',
    '/v1/catalog/service/',
    '/v1/catalog/services',
    '/v1/health/checks/',
    '/v1/health/connect/',
    '/v1/health/node/',
    '/v1/health/service/',
  ].map((path) => [path, DC_AND_PEER] as const),
]);

/** Throws when the request names another datacenter or a peer its route reads. */
function refuseElsewhere(req: ApiRequest, datacenter: string, scope: Scope): void {
  if (req.head.rawQuery === '') return;
  const dc = req.query.get('dc');
  if (dc !== undefined && dc !== '' && dc !== datacenter) throw agentError('DC_NO_PATH');
  if (!scope.peer) return;
  const peer = req.query.get('peer');
  if (peer !== undefined && peer !== '') throw agentError('PEERING_UNSUPPORTED');
}

function scopedAcl<P>(acl: AclRule<P>, datacenter: string, scope: Scope): AclRule<P> {
  return (req: ApiRequest, parsed: P) => {
    refuseElsewhere(req, datacenter, scope);
    return typeof acl === 'function' ? acl(req, parsed) : acl;
  };
}

function scopedMethod(spec: MethodSpec | ParsedMethod, datacenter: string, scope: Scope): MethodSpec | ParsedMethod {
  if ('open' in spec)
    return spec.open((parsed) => parsedMethod({ ...parsed, acl: scopedAcl(parsed.acl, datacenter, scope) }));
  return { ...spec, acl: scopedAcl(spec.acl, datacenter, scope) };
}

/** The routes with `?dc` and `?peer` checked where Consul reads them; the others as they are. */
export function scopeToDatacenter(routes: readonly Route[], datacenter: string): Route[] {
  return routes.map((route) => {
    const scope = SCOPES.get(route.path);
    if (scope === undefined) return route;
    const methods: Partial<Record<Method, MethodSpec | ParsedMethod>> = {};
    for (const [method, spec] of Object.entries(route.methods) as [Method, MethodSpec | ParsedMethod][])
      methods[method] = scopedMethod(spec, datacenter, scope);
    return { ...route, methods };
  });
}
