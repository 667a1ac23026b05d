// The HTTP API as one route table plus the headers every response carries, built once from the
// agent's components. Adding an endpoint means adding its routes here.
import type { AgentConfig } from '../config/types.js';
import { brandHeaders, type BrandHeaders } from './brand.js';
import type { Header } from './reply.js';
import { compileRoutes, type CompiledRoute, type Route } from './routes.js';

export function commonHeaders(config: AgentConfig, brand: BrandHeaders): Header[] {
  const headers: Header[] = [[brand.defaultAclPolicy, config.acl.defaultPolicy]];
  if (config.translateWanAddrs) headers.push([brand.translateAddresses, 'true']);
  return headers;
}

export function buildApi(config: AgentConfig, routeGroups: readonly (readonly Route[])[]): CompiledRoute[] {
  return compileRoutes(routeGroups.flat(), config.limits.httpMaxBodyBytes);
}

export { brandHeaders };
