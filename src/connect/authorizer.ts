// The authorize decision in-process, for a proxy that embeds the agent instead of calling
// POST /v1/agent/connect/authorize: the same function as the endpoint (authorize.ts), with the
// caller's token (or the agent's default token) in place of the request's. Without a request,
// namespace resolution has no `?ns` or header step: the request's Namespace, the token's, `default`.
import { ANONYMOUS_SECRET } from '../acl/builtin.js';
import type { Identity } from '../acl/identity.js';
import { authorize, type AuthorizeDeps, type AuthorizeRequest, type AuthorizeResult } from './authorize.js';

export interface ConnectAuthorizerDeps extends AuthorizeDeps {
  /** Token secret → identity; throws `ACL not found` for an unknown token. */
  readonly resolve: (secret: string) => Identity;
  /** The agent's default token (acl.tokens.default), used when the caller gives none. */
  readonly defaultToken: string | undefined;
}

export type Authorize = (request: AuthorizeRequest, token?: string) => AuthorizeResult;

/** Builds `authorize(request, token?)`: returns the decision, or throws the AgentError HTTP would answer. */
export function connectAuthorizer(deps: ConnectAuthorizerDeps): Authorize {
  return (request, token) =>
    authorize(deps, request, () => deps.resolve(token || deps.defaultToken || ANONYMOUS_SECRET)).decision.result;
}
