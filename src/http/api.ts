// The HTTP API as one route table plus the headers every response carries, built once from the
// agent's components. Adding an endpoint means adding its routes here.
import { UNRESOLVED_IDENTITY } from '../acl/identity.js';
import type { AclResolver } from '../acl/resolver.js';
import type { AgentConfig } from '../config/types.js';
import type { AclGate } from './guard.js';
import { effectiveToken } from './token.js';
import { brandHeaders, type BrandHeaders } from './brand.js';
import type { Header } from './reply.js';
import { compileRoutes, type CompiledRoute, type Route } from './routes.js';

export function commonHeaders(config: AgentConfig, brand: BrandHeaders): Header[] {
  const headers: Header[] = [[brand.defaultAclPolicy, config.acl.defaultPolicy]];
  if (config.translateWanAddrs) headers.push([brand.translateAddresses, 'true']);
  return headers;
}

/** `maxBodyBytes`: the body cap of routes without their own, read per request (a reload changes it). */
export function buildApi(
  maxBodyBytes: () => number,
  gate: AclGate,
  routeGroups: readonly (readonly Route[])[],
): CompiledRoute[] {
  return compileRoutes(routeGroups.flat(), gate, maxBodyBytes);
}

/** The ACL gate of the HTTP layer: a request's effective token resolved by the resolver. */
export function aclGate(resolver: AclResolver, defaultToken: () => string | undefined): AclGate {
  return {
    enabled: resolver.enabled,
    identify: (req) => resolver.resolve(effectiveToken(req, defaultToken())),
    unresolved: UNRESOLVED_IDENTITY,
  };
}

export { brandHeaders };
