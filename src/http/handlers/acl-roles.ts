// /v1/acl/role* and /v1/acl/templated-polic* (docs/decisions.md#acl-roles, #templated-policies).
// Thin: bodies are decoded by acl-body.ts, the rules live in src/acl (roles.ts, templated.ts). Every
// route is `aclApi` (401 while ACLs are off) and declares Consul's ACL requirement; role reads are
// blocking queries with the index headers. A role that is not there is a 404 with no body, as
// Consul's handler writes it.
import { ACL_POLICIES, ACL_ROLES, type StoredRole } from '../../acl/model.js';
import { policyHash } from '../../acl/policies.js';
import type { AclRoles } from '../../acl/roles.js';
import {
  findTemplate,
  listTemplates,
  syntheticPolicy,
  templateJson,
  templateVariablesError,
} from '../../acl/templated.js';
import { agentError } from '../../core/errors.js';
import type { Row } from '../../state/types.js';
import { jsonReply, type Header, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { Outcome, Route } from '../routes.js';
import { decodePreviewBody, decodeRoleBody } from './acl-body.js';
import { ACL_READ, ACL_WRITE, aclCrud, unlessEmpty, type AclCrudDeps, type RowRead } from './acl-crud.js';

export interface AclRoleRouteDeps extends AclCrudDeps {
  readonly roles: AclRoles;
}

export function aclRoleRoutes(deps: AclRoleRouteDeps): Route[] {
  const { roles, store } = deps;
  const crud = aclCrud(deps);

  // Role JSON names its policies, so a role read's index covers the policy table too.
  const rolesIndex = (): number => Math.max(store.tableIndex(ACL_ROLES), store.tableIndex(ACL_POLICIES));

  /** A role that is not there: 404 with no body, as Consul's handler writes it. */
  const role = (find: () => Row<StoredRole> | undefined, key?: string): RowRead<Row<StoredRole>> => ({
    table: ACL_ROLES,
    key,
    index: rolesIndex,
    find,
    json: (row) => roles.view(row),
    absent: (meta: Header[]): Reply => ({ status: 404, headers: meta }),
  });

  const createRole = async (req: ApiRequest): Promise<Reply> => {
    const row = await roles.upsert('', decodeRoleBody(req.body));
    return jsonReply(roles.view(row), req.pretty);
  };

  const getRole = crud.readByRest('ACL_MISSING_ROLE_ID', (id) => role(() => roles.read(id), id));

  const getRoleByName = crud.readByRest('ACL_MISSING_ROLE_NAME', (name) => role(() => roles.readByName(name)));

  const putRole = async (req: ApiRequest): Promise<Reply> => {
    // An empty ID in the URL and the body creates, as in Consul.
    const row = await roles.upsert(req.rest, decodeRoleBody(req.body));
    return jsonReply(roles.view(row), req.pretty);
  };

  const deleteRole = crud.deleteByRest('ACL_MISSING_ROLE_ID', (id) => roles.delete(id));

  const listRoles = (req: ApiRequest): Outcome => {
    const policy = req.query.get('policy');
    return crud.list(req, ACL_ROLES, () => roles.list(policy).map((row) => roles.view(row)), rolesIndex);
  };

  const listTemplated = (req: ApiRequest): Reply => {
    const all: Record<string, unknown> = {};
    for (const t of listTemplates()) all[t.TemplateName] = templateJson(t);
    return jsonReply(all, req.pretty);
  };

  const readTemplated = (req: ApiRequest): Reply => {
    const name = req.rest;
    if (name === '') throw agentError('ACL_MISSING_TEMPLATED_NAME');
    const base = findTemplate(name);
    if (base === undefined) throw agentError('ACL_TEMPLATED_NAME_INVALID', { name });
    return jsonReply(templateJson(base), req.pretty);
  };

  const previewTemplated = (req: ApiRequest): Reply => {
    const name = req.rest;
    if (name === '') throw agentError('ACL_MISSING_TEMPLATED_NAME');
    const base = findTemplate(name);
    if (base === undefined) throw agentError('ACL_TEMPLATED_NAME_INVALID', { name });
    const variables = decodePreviewBody(req.body);
    const problem = templateVariablesError(base, variables);
    if (problem !== undefined) throw agentError('ACL_TEMPLATED_PREVIEW_INVALID', { name, detail: problem });
    const policy = syntheticPolicy(base, variables.Name ?? '');
    return jsonReply(
      {
        ...policy,
        Hash: policyHash(policy.Name, policy.Description, policy.Rules, null),
        CreateIndex: 0,
        ModifyIndex: 0,
      },
      req.pretty,
    );
  };

  return [
    { path: '/v1/acl/role', aclApi: true, methods: { PUT: { handler: createRole, acl: ACL_WRITE } } },
    {
      path: '/v1/acl/role/',
      prefix: true,
      aclApi: true,
      methods: {
        GET: { handler: getRole, acl: unlessEmpty(ACL_READ) },
        PUT: { handler: putRole, acl: ACL_WRITE },
        DELETE: { handler: deleteRole, acl: unlessEmpty(ACL_WRITE) },
      },
    },
    {
      path: '/v1/acl/role/name/',
      prefix: true,
      aclApi: true,
      methods: { GET: { handler: getRoleByName, acl: unlessEmpty(ACL_READ) } },
    },
    { path: '/v1/acl/roles', aclApi: true, methods: { GET: { handler: listRoles, acl: ACL_READ } } },
    {
      path: '/v1/acl/templated-policies',
      aclApi: true,
      methods: { GET: { handler: listTemplated, acl: ACL_READ } },
    },
    {
      path: '/v1/acl/templated-policy/name/',
      prefix: true,
      aclApi: true,
      methods: { GET: { handler: readTemplated, acl: unlessEmpty(ACL_READ) } },
    },
    {
      path: '/v1/acl/templated-policy/preview/',
      prefix: true,
      aclApi: true,
      methods: { POST: { handler: previewTemplated, acl: unlessEmpty(ACL_READ), readsOnly: true } },
    },
  ];
}
