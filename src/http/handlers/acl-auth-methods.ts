// /v1/acl/auth-method* and /v1/acl/binding-rule* (docs/decisions.md#auth-methods). Thin: bodies are
// decoded by acl-auth-methods-body.ts, the rules live in src/acl/auth-methods/. Every route is
// `aclApi` (401 while ACLs are off) and declares Consul's requirement (acl:read to read, acl:write to
// write); reads are blocking queries with the index headers. A missing name or ID is a 400 before
// any token is looked at, as Consul's handler answers it.
import type { AclAuthMethods } from '../../acl/auth-methods/auth-methods.js';
import type { AclBindingRules } from '../../acl/auth-methods/binding-rules.js';
import {
  ACL_AUTH_METHODS,
  ACL_BINDING_RULES,
  authMethodJson,
  authMethodStubJson,
  bindingRuleJson,
} from '../../acl/auth-methods/model.js';
import { agentError } from '../../core/errors.js';
import { jsonReply, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { Outcome, Route } from '../routes.js';
import { decodeAuthMethodBody, decodeBindingRuleBody } from './acl-auth-methods-body.js';
import { ACL_READ, ACL_WRITE, aclCrud, notFound, unlessEmpty, type AclCrudDeps } from './acl-crud.js';

export interface AclAuthMethodRouteDeps extends AclCrudDeps {
  readonly methods: AclAuthMethods;
  readonly rules: AclBindingRules;
}

export function aclAuthMethodRoutes(deps: AclAuthMethodRouteDeps): Route[] {
  const { methods, rules } = deps;
  const crud = aclCrud(deps);

  const putMethod = async (req: ApiRequest): Promise<Reply> => {
    const input = decodeAuthMethodBody(req.body);
    const urlName = req.rest;
    if (urlName !== '' && input.Name && input.Name !== urlName) throw agentError('ACL_AUTH_METHOD_NAME_MISMATCH');
    const row = await methods.upsert({ ...input, Name: input.Name || urlName });
    return jsonReply(authMethodJson(row), req.pretty);
  };

  const getMethod = crud.readByRest('ACL_MISSING_AUTH_METHOD_NAME', (name) => ({
    table: ACL_AUTH_METHODS,
    key: name,
    find: () => methods.read(name),
    json: authMethodJson,
    absent: notFound('ACL_AUTH_METHOD_READ_NOT_FOUND'),
  }));

  const deleteMethod = crud.deleteByRest('ACL_MISSING_AUTH_METHOD_NAME', (name) => methods.delete(name));

  const listMethods = (req: ApiRequest): Outcome =>
    crud.list(req, ACL_AUTH_METHODS, () => methods.list().map(authMethodStubJson));

  const putRule = async (req: ApiRequest): Promise<Reply> => {
    const input = decodeBindingRuleBody(req.body);
    const urlId = req.rest;
    if (input.ID && input.ID !== urlId) throw agentError('ACL_BINDING_RULE_ID_MISMATCH');
    const row = await rules.upsert({ ...input, ID: input.ID || urlId });
    return jsonReply(bindingRuleJson(row), req.pretty);
  };

  const getRule = crud.readByRest('ACL_MISSING_BINDING_RULE_ID', (id) => ({
    table: ACL_BINDING_RULES,
    key: id,
    find: () => rules.read(id),
    json: bindingRuleJson,
    absent: notFound('ACL_BINDING_RULE_READ_NOT_FOUND'),
  }));

  const deleteRule = crud.deleteByRest('ACL_MISSING_BINDING_RULE_ID', (id) => rules.delete(id));

  const listRules = (req: ApiRequest): Outcome => {
    const authMethod = req.query.get('authmethod') ?? '';
    return crud.list(req, ACL_BINDING_RULES, () => rules.list(authMethod).map(bindingRuleJson));
  };

  return [
    { path: '/v1/acl/auth-method', aclApi: true, methods: { PUT: { handler: putMethod, acl: ACL_WRITE } } },
    {
      path: '/v1/acl/auth-method/',
      prefix: true,
      aclApi: true,
      methods: {
        GET: { handler: getMethod, acl: unlessEmpty(ACL_READ) },
        PUT: { handler: putMethod, acl: ACL_WRITE },
        DELETE: { handler: deleteMethod, acl: unlessEmpty(ACL_WRITE) },
      },
    },
    { path: '/v1/acl/auth-methods', aclApi: true, methods: { GET: { handler: listMethods, acl: ACL_READ } } },
    { path: '/v1/acl/binding-rule', aclApi: true, methods: { PUT: { handler: putRule, acl: ACL_WRITE } } },
    {
      path: '/v1/acl/binding-rule/',
      prefix: true,
      aclApi: true,
      methods: {
        GET: { handler: getRule, acl: unlessEmpty(ACL_READ) },
        PUT: { handler: putRule, acl: ACL_WRITE },
        DELETE: { handler: deleteRule, acl: unlessEmpty(ACL_WRITE) },
      },
    },
    { path: '/v1/acl/binding-rules', aclApi: true, methods: { GET: { handler: listRules, acl: ACL_READ } } },
  ];
}
