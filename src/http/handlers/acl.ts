// /v1/acl/*: bootstrap, tokens and policies (docs/decisions.md#acl-api), with roles and templated
// policies from acl-roles.ts. Thin: bodies are decoded by acl-body.ts, the reads and deletes the
// ACL resources share are acl-crud.ts's, the rules live in src/acl (tokens.ts, policies.ts,
// roles.ts), the shapes in acl/render.ts.
// Every route is `aclApi` (401 `ACL support disabled` while ACLs are off) and declares its ACL
// requirement; reads are blocking queries with the index headers. In a cluster, a secret shown to a
// caller with acl:write comes from the servers (acl/secrets.ts) and is kept (it never changes): a
// read that needs one this agent was never shown fetches it and answers at once instead of parking
// (a blocking query may return early), and a list woken by a token made meanwhile shows `<hidden>`
// for it until the next read.
import type { Identity } from '../../acl/identity.js';
import { ACL_POLICIES, ACL_ROLES, ACL_TOKENS, type StoredPolicy, type StoredToken } from '../../acl/model.js';
import type { AclPolicies } from '../../acl/policies.js';
import type { AclRoles } from '../../acl/roles.js';
import { AclTokens, type TokenFilter } from '../../acl/tokens.js';
import { agentError } from '../../core/errors.js';
import { DEFAULT_NAMESPACE } from '../../core/namespace.js';
import type { Row } from '../../state/types.js';
import { queryMetaHeaders } from '../blocking.js';
import { requestNamespace as namespaceOf } from '../namespace.js';
import { errorTextReply, jsonReply, type Header, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { AclRequirement, Outcome, Route } from '../routes.js';
import { decodeBootstrapBody, decodePolicyBody, decodeTokenBody } from './acl-body.js';
import { ACL_READ, ACL_WRITE, aclCrud, notFound, unlessEmpty, type AclCrudDeps } from './acl-crud.js';
import { aclRoleRoutes } from './acl-roles.js';

export interface AclRouteDeps extends AclCrudDeps {
  readonly tokens: AclTokens;
  readonly policies: AclPolicies;
  readonly roles: AclRoles;
}

const CLONE_SUFFIX = '/clone';

/** A token read's answer when the token is missing: one text for an accessor, another for `self`. */
type TokenMissing = 'ACL_TOKEN_READ_NOT_FOUND' | 'ACL_TOKEN_SELF_NOT_FOUND';

/** Without acl:write a caller sees `<hidden>` for every SecretID. */
const canSeeSecrets = (identity: Identity): boolean => identity.authorizer.allowed('acl', 'write');

export function aclRoutes(deps: AclRouteDeps): Route[] {
  const { tokens, policies, store, brand } = deps;
  const crud = aclCrud(deps);

  // Token JSON names its policies and roles, so a token read's index covers their tables too.
  const linksIndex = (): number => Math.max(store.tableIndex(ACL_POLICIES), store.tableIndex(ACL_ROLES));
  const tokenIndex = (accessor: string) => (): number => Math.max(store.keyIndex(ACL_TOKENS, accessor), linksIndex());

  /** Answers at once with the secrets fetched, or parks as any blocking read when none is missing. */
  const withSecretsFirst = (
    rows: readonly Row<StoredToken>[],
    identity: Identity,
    read: (now: boolean) => Outcome,
  ): Outcome => {
    if (!tokens.needsSecrets(rows, identity)) return read(false);
    return tokens.withSecrets(rows, identity).then(() => read(true) as Reply);
  };

  const readToken = (
    req: ApiRequest,
    accessor: string,
    reveal: boolean,
    missing: TokenMissing,
    identity: Identity,
    now = false,
  ): Outcome => {
    const pretty = req.pretty;
    const index = tokenIndex(accessor);
    const render = (meta: Header[]): Reply => {
      const row = tokens.read(accessor);
      if (row === undefined) return errorTextReply(agentError(missing), meta);
      return jsonReply(tokens.view(row, reveal, identity), pretty, meta);
    };
    if (now) return render(queryMetaHeaders(brand, index()));
    return crud.blockingRead(req, { table: ACL_TOKENS, key: accessor }, index, render);
  };

  const bootstrap = async (req: ApiRequest): Promise<Reply> => {
    const token = await tokens.bootstrap(decodeBootstrapBody(req.body));
    return jsonReply(tokens.bootstrapView(token), req.pretty);
  };

  const createToken = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    const token = await tokens.create(decodeTokenBody(req.body), newTokenNamespace(req, identity));
    return jsonReply(tokens.view(token, true), req.pretty);
  };

  const getToken = (req: ApiRequest, identity: Identity): Outcome => {
    const accessor = req.rest;
    // The caller's own token, secret shown: whoever holds a secret may read its token.
    if (accessor === 'self') return readToken(req, identity.accessorId, true, 'ACL_TOKEN_SELF_NOT_FOUND', identity);
    if (accessor === '') throw agentError('ACL_MISSING_ACCESSOR');
    const reveal = canSeeSecrets(identity);
    const row = reveal ? tokens.read(accessor) : undefined;
    if (row === undefined) return readToken(req, accessor, reveal, 'ACL_TOKEN_READ_NOT_FOUND', identity);
    return withSecretsFirst([row], identity, (now) =>
      readToken(req, accessor, true, 'ACL_TOKEN_READ_NOT_FOUND', identity, now),
    );
  };

  const putToken = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    const rest = req.rest;
    if (rest === 'self') return selfMethodNotAllowed(req);
    const input = decodeTokenBody(req.body);
    let row: Row<StoredToken>;
    if (rest.endsWith(CLONE_SUFFIX)) row = await tokens.clone(rest.slice(0, -CLONE_SUFFIX.length), input.Description);
    // Consul treats a PUT with no AccessorID anywhere as a create.
    else if (rest === '' && !input.AccessorID) row = await tokens.create(input, newTokenNamespace(req, identity));
    else [row] = (await tokens.withSecrets([await tokens.update(rest, input)], identity)) as [Row<StoredToken>];
    return jsonReply(tokens.view(row, true, identity), req.pretty);
  };

  const deleteToken = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    const accessor = req.rest;
    if (accessor === 'self') return selfMethodNotAllowed(req);
    if (accessor === '') throw agentError('ACL_MISSING_ACCESSOR');
    await tokens.delete(accessor, identity.accessorId);
    return jsonReply(true, req.pretty);
  };

  const listTokens = (req: ApiRequest, identity: Identity): Outcome => {
    const query = req.query;
    const filter: TokenFilter = {
      policy: query.get('policy'),
      role: query.get('role'),
      authMethod: query.get('authmethod'),
      serviceName: query.get('servicename'),
      namespace: namespaceOf(req, undefined, undefined),
    };
    AclTokens.checkFilter(filter);
    const reveal = canSeeSecrets(identity);
    const pretty = req.pretty;
    const index = (): number => Math.max(store.tableIndex(ACL_TOKENS), linksIndex());
    const render = (meta: Header[]): Reply =>
      jsonReply(
        tokens.list(filter).map((row) => tokens.stub(row, reveal, identity)),
        pretty,
        meta,
      );
    const read = (now: boolean): Outcome =>
      now ? render(queryMetaHeaders(brand, index())) : crud.blockingRead(req, { table: ACL_TOKENS }, index, render);
    return reveal ? withSecretsFirst(tokens.list(filter), identity, read) : read(false);
  };

  const createPolicy = async (req: ApiRequest): Promise<Reply> => {
    const row = await policies.create(decodePolicyBody(req.body));
    return jsonReply(policies.view(row), req.pretty);
  };

  const policyJson = (row: Row<StoredPolicy>): unknown => policies.view(row);
  const getPolicy = crud.readByRest('ACL_MISSING_POLICY_ID', (id) => ({
    table: ACL_POLICIES,
    key: id,
    find: () => policies.read(id),
    json: policyJson,
    absent: notFound('ACL_POLICY_READ_NOT_FOUND'),
  }));

  const getPolicyByName = crud.readByRest('ACL_MISSING_POLICY_NAME', (rest) => {
    // Consul unescapes the name once more, so a name with a '/' can be sent as %2F.
    const name = queryUnescape(rest);
    return {
      table: ACL_POLICIES,
      find: () => policies.readByName(name),
      json: policyJson,
      absent: notFound('ACL_POLICY_READ_NOT_FOUND'),
    };
  });

  const putPolicy = async (req: ApiRequest): Promise<Reply> => {
    // An empty ID in the URL and the body creates, as in Consul.
    const row = await policies.update(req.rest, decodePolicyBody(req.body));
    return jsonReply(policies.view(row), req.pretty);
  };

  const deletePolicy = crud.deleteByRest('ACL_MISSING_POLICY_ID', (id) => policies.delete(id));

  const listPolicies = (req: ApiRequest): Outcome =>
    crud.list(req, ACL_POLICIES, () => policies.list().map((row) => policies.stub(row)));

  // Requests Consul answers before looking at the token (a missing ID, the 405 of `self`) ask
  // for nothing here either.
  const tokenReadAcl = (req: ApiRequest): AclRequirement =>
    req.rest === 'self' ? 'resolved' : req.rest === '' ? 'none' : ACL_READ;
  const tokenWriteAcl = (req: ApiRequest): AclRequirement => (req.rest === 'self' ? 'none' : ACL_WRITE);
  const tokenDeleteAcl = (req: ApiRequest): AclRequirement =>
    req.rest === 'self' || req.rest === '' ? 'none' : ACL_WRITE;

  return [
    { path: '/v1/acl/bootstrap', aclApi: true, methods: { PUT: { handler: bootstrap, acl: 'none' } } },
    { path: '/v1/acl/token', aclApi: true, methods: { PUT: { handler: createToken, acl: ACL_WRITE } } },
    {
      path: '/v1/acl/token/',
      prefix: true,
      aclApi: true,
      methods: {
        GET: { handler: getToken, acl: tokenReadAcl },
        PUT: { handler: putToken, acl: tokenWriteAcl },
        DELETE: { handler: deleteToken, acl: tokenDeleteAcl },
      },
    },
    { path: '/v1/acl/tokens', aclApi: true, methods: { GET: { handler: listTokens, acl: ACL_READ } } },
    { path: '/v1/acl/policy', aclApi: true, methods: { PUT: { handler: createPolicy, acl: ACL_WRITE } } },
    {
      path: '/v1/acl/policy/',
      prefix: true,
      aclApi: true,
      methods: {
        GET: { handler: getPolicy, acl: unlessEmpty(ACL_READ) },
        PUT: { handler: putPolicy, acl: ACL_WRITE },
        DELETE: { handler: deletePolicy, acl: unlessEmpty(ACL_WRITE) },
      },
    },
    {
      path: '/v1/acl/policy/name/',
      prefix: true,
      aclApi: true,
      methods: { GET: { handler: getPolicyByName, acl: unlessEmpty(ACL_READ) } },
    },
    { path: '/v1/acl/policies', aclApi: true, methods: { GET: { handler: listPolicies, acl: ACL_READ } } },
    ...aclRoleRoutes(deps),
  ];
}

/** A new token's namespace when its body names none (docs/decisions.md D2; the domain applies the body's): ?ns, header, the caller's token, default. */
function newTokenNamespace(req: ApiRequest, identity: Identity): string {
  return namespaceOf(req, identity.namespace, DEFAULT_NAMESPACE);
}

/** Consul registers /v1/acl/token/self for GET only. */
function selfMethodNotAllowed(req: ApiRequest): Reply {
  return errorTextReply(agentError('HTTP_METHOD_NOT_ALLOWED', { method: req.method }), [['Allow', 'OPTIONS,GET']]);
}

/** Go's url.QueryUnescape: '+' is a space; a bad escape is an error with Go's text. */
function queryUnescape(s: string): string {
  const bad = /%(?![0-9a-fA-F]{2})(.{0,2})/.exec(s);
  if (bad !== null) throw agentError('ACL_BAD_ESCAPE', { escape: bad[0] });
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    // Valid escapes that are not UTF-8: Go keeps the raw bytes; a JS string cannot, so keep the text.
    return s.replace(/\+/g, ' ');
  }
}
