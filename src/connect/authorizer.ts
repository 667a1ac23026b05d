// The authorize decision in-process, for a proxy that embeds the agent instead of calling
// POST /v1/agent/connect/authorize: the same checks in the same order, the same ACL rule
// (service:write on Target), the same index and reasons, with no HTTP in between. Namespace
// resolution keeps the steps that exist without a request: the request's Namespace, the token's
// namespace, `default`.
import { ANONYMOUS_SECRET } from '../acl/builtin.js';
import { requirePermission, type Identity } from '../acl/identity.js';
import { invalid } from '../core/errors.js';
import { checkAuthorizeRequest, checkPartition, decide, type AuthorizeRequest, type AuthorizeResult } from './authorize.js';
import type { IntentionStore } from './intentions/store.js';

export interface ConnectAuthorizerDeps {
  readonly intentions: IntentionStore;
  /** Token secret → identity; throws `ACL not found` for an unknown token. */
  readonly resolve: (secret: string) => Identity;
  /** The agent's default token (acl.tokens.default), used when the caller gives none. */
  readonly defaultToken: string | undefined;
  readonly connectEnabled: boolean;
}

export type Authorize = (request: AuthorizeRequest, token?: string) => AuthorizeResult;

export const CONNECT_DISABLED = 'Connect must be enabled in order to use this endpoint';

/** Builds `authorize(request, token?)`: returns the decision, or throws the AgentError HTTP would answer. */
export function connectAuthorizer(deps: ConnectAuthorizerDeps): Authorize {
  return (request, token) => {
    if (!deps.connectEnabled) throw invalid('CONNECT_DISABLED', CONNECT_DISABLED);
    if (request === null || typeof request !== 'object') throw invalid('BODY_DECODE', 'Request decode failed: the request must be an object');
    const target = field(request.Target, 'Target');
    const namespace = field(request.Namespace, 'Namespace');
    const source = checkAuthorizeRequest(target, field(request.ClientCertURI, 'ClientCertURI'));
    const identity = deps.resolve(token || deps.defaultToken || ANONYMOUS_SECRET);
    requirePermission(identity, 'service', 'write', target);
    checkPartition(source);
    return decide(deps.intentions.current(), namespace || identity.namespace || 'default', target, source, identity.authorizer.defaultAllow).result;
  };
}

function field(value: unknown, name: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw invalid('BODY_DECODE', `Request decode failed: ${name} must be a string`);
  return value;
}
