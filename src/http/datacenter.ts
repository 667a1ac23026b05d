// The query options `?dc=` and `?peer=` (docs/decisions.md#datacenters). An agent serves its own
// datacenter and has no peers: every route reads `dc` unless UNSCOPED_ROUTES names it (its Consul
// handler ignores dc), and another datacenter's name is Consul's 500 `No path to datacenter` (its
// servers find no route to forward to); on the routes that also read `peer`, a peer's name is
// refused, as Consul refuses peering calls while peering is off. Scoped is the default so that a
// new route cannot be left unscoped by forgetting a list (test/unit/http/datacenter-routes.test.ts
// checks every route the agent registers). The check runs after a method's parse phase (a
// malformed body is still its 400, as Consul decodes before it forwards) and before its ACL check
// (Consul's servers check the token after forwarding), by wrapping the ACL rule each method
// declares, once, when the table is built: the route table keeps one enforcement point (guard.ts)
// and no handler has to remember the option.
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

/**
 * The routes whose Consul handler never reads `?dc` (no s.parse, s.parseDC or parseSource in
 * agent/*_endpoint.go): they answer whatever dc a request names. Every other route is scoped.
 */
export const UNSCOPED_ROUTES: ReadonlySet<string> = new Set([
  // The agent's own endpoints, answered from this agent's state (agent/agent_endpoint.go); its CA
  // roots and leaf are not here: Consul reads dc for those (agent/connect/ca/roots, .../leaf/).
  '/v1/agent/check/deregister/',
  '/v1/agent/check/fail/',
  '/v1/agent/check/pass/',
  '/v1/agent/check/register',
  '/v1/agent/check/update/',
  '/v1/agent/check/warn/',
  '/v1/agent/checks',
  '/v1/agent/connect/authorize',
  '/v1/agent/force-leave/',
  '/v1/agent/health/service/id/',
  '/v1/agent/health/service/name/',
  '/v1/agent/join/',
  '/v1/agent/leave',
  '/v1/agent/maintenance',
  '/v1/agent/members',
  '/v1/agent/metrics',
  '/v1/agent/monitor',
  '/v1/agent/reload',
  '/v1/agent/self',
  '/v1/agent/service/',
  '/v1/agent/service/deregister/',
  '/v1/agent/service/maintenance/',
  '/v1/agent/service/register',
  '/v1/agent/services',
  '/v1/agent/token/',
  // ACLBootstrap takes the agent's own datacenter.
  '/v1/acl/bootstrap',
  // The built-in templates, answered by the agent itself (ACLTemplatedPolicy*).
  '/v1/acl/templated-policies',
  '/v1/acl/templated-policy/name/',
  '/v1/acl/templated-policy/preview/',
  // The list of datacenters itself.
  '/v1/catalog/datacenters',
  // Their datacenter is the body's `Datacenter`, not the query's.
  '/v1/catalog/register',
  '/v1/catalog/deregister',
  // This agent's own user events (EventList parses only the blocking options).
  '/v1/event/list',
]);

/** The scoped routes whose Consul handler also reads `?peer` (parsePeerName): the catalog and health reads. */
export const PEER_ROUTES: ReadonlySet<string> = new Set([
  '/v1/catalog/node-services/',
  '/v1/catalog/node/',
  '/v1/catalog/nodes',
  '/v1/catalog/service/',
  '/v1/catalog/services',
  '/v1/health/checks/',
  '/v1/health/connect/',
  '/v1/health/node/',
  '/v1/health/service/',
]);

/** Throws when the request names another datacenter or a peer its route reads. */
function refuseElsewhere(req: ApiRequest, datacenter: string, readsPeer: boolean): void {
  if (req.head.rawQuery === '') return;
  const dc = req.query.get('dc');
  if (dc !== undefined && dc !== '' && dc !== datacenter) throw agentError('DC_NO_PATH');
  if (!readsPeer) return;
  const peer = req.query.get('peer');
  if (peer !== undefined && peer !== '') throw agentError('PEERING_UNSUPPORTED');
}

function scopedAcl<P>(acl: AclRule<P>, datacenter: string, readsPeer: boolean): AclRule<P> {
  return (req: ApiRequest, parsed: P) => {
    refuseElsewhere(req, datacenter, readsPeer);
    return typeof acl === 'function' ? acl(req, parsed) : acl;
  };
}

function scopedMethod(
  spec: MethodSpec | ParsedMethod,
  datacenter: string,
  readsPeer: boolean,
): MethodSpec | ParsedMethod {
  if ('open' in spec)
    return spec.open((parsed) => parsedMethod({ ...parsed, acl: scopedAcl(parsed.acl, datacenter, readsPeer) }));
  return { ...spec, acl: scopedAcl(spec.acl, datacenter, readsPeer) };
}

/** The routes with `?dc` and `?peer` checked where Consul reads them; the unscoped ones as they are. */
export function scopeToDatacenter(routes: readonly Route[], datacenter: string): Route[] {
  return routes.map((route) => {
    if (UNSCOPED_ROUTES.has(route.path)) return route;
    const readsPeer = PEER_ROUTES.has(route.path);
    const methods: Partial<Record<Method, MethodSpec | ParsedMethod>> = {};
    for (const [method, spec] of Object.entries(route.methods) as [Method, MethodSpec | ParsedMethod][])
      methods[method] = scopedMethod(spec, datacenter, readsPeer);
    return { ...route, methods };
  });
}
