// POST /v1/acl/login and /v1/acl/logout (docs/decisions.md#auth-methods). Login looks at no token
// (the bearer token in the body is the credential) and answers the new token, secret shown, as a
// token create does; logout acts on the request's own token, which must resolve and must be one a
// login made. Both are `aclApi` (401 while ACLs are off). In a cluster a client agent forwards both
// to a server (they change shared state), which validates the JWT, fetching any JWKS itself.
import type { AclLogin } from '../../acl/auth-methods/login.js';
import type { AclTokens } from '../../acl/tokens.js';
import { jsonReply, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { Identity } from '../../acl/identity.js';
import type { Route } from '../routes.js';
import { decodeLoginBody } from './acl-auth-methods-body.js';

export interface AclLoginRouteDeps {
  readonly login: AclLogin;
  readonly tokens: AclTokens;
}

export function aclLoginRoutes(deps: AclLoginRouteDeps): Route[] {
  const login = async (req: ApiRequest): Promise<Reply> => {
    const token = await deps.login.login(decodeLoginBody(req.body));
    return jsonReply(deps.tokens.view(token, true), req.pretty);
  };

  const logout = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    await deps.login.logout(identity);
    return jsonReply(true, req.pretty);
  };

  return [
    { path: '/v1/acl/login', aclApi: true, methods: { POST: { handler: login, acl: 'none' } } },
    { path: '/v1/acl/logout', aclApi: true, methods: { POST: { handler: logout, acl: 'resolved' } } },
  ];
}
