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
import type { StateStore, WatchTarget } from '../../state/types.js';
import { parseBlockingParams, queryMetaHeaders, type BlockingLimits, type BlockingQueries } from '../blocking.js';
import type { BrandHeaders } from '../brand.js';
import { errorTextReply, jsonReply, type Header, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { AclRequirement, Outcome, Permission, Route } from '../routes.js';
import { decodeAuthMethodBody, decodeBindingRuleBody } from './acl-auth-methods-body.js';

export interface AclAuthMethodRouteDeps {
  readonly methods: AclAuthMethods;
  readonly rules: AclBindingRules;
  readonly store: StateStore;
  readonly blocking: BlockingQueries;
  readonly brand: BrandHeaders;
  readonly limits: BlockingLimits;
  readonly random: () => number;
}

const ACL_READ: Permission = Object.freeze({ resource: 'acl', access: 'read' });
const ACL_WRITE: Permission = Object.freeze({ resource: 'acl', access: 'write' });

export function aclAuthMethodRoutes(deps: AclAuthMethodRouteDeps): Route[] {
  const { methods, rules, store, brand } = deps;

  const blockingRead = (req: ApiRequest, target: WatchTarget, index: () => number, render: (meta: Header[]) => Reply) =>
    deps.blocking.answer(req, parseBlockingParams(req.query, deps.limits, deps.random), {
      target,
      index,
      render: (at) => render(queryMetaHeaders(brand, at)),
    });

  const putMethod = async (req: ApiRequest): Promise<Reply> => {
    const input = decodeAuthMethodBody(req.body);
    const urlName = req.rest;
    if (urlName !== '' && input.Name && input.Name !== urlName) throw agentError('ACL_AUTH_METHOD_NAME_MISMATCH');
    const row = await methods.upsert({ ...input, Name: input.Name || urlName });
    return jsonReply(authMethodJson(row), req.pretty);
  };

  const getMethod = (req: ApiRequest): Outcome => {
    const name = req.rest;
    if (name === '') throw agentError('ACL_MISSING_AUTH_METHOD_NAME');
    const pretty = req.pretty;
    return blockingRead(
      req,
      { table: ACL_AUTH_METHODS, key: name },
      () => store.keyIndex(ACL_AUTH_METHODS, name),
      (meta) => {
        const row = methods.read(name);
        if (row === undefined) return errorTextReply(agentError('ACL_AUTH_METHOD_READ_NOT_FOUND'), meta);
        return jsonReply(authMethodJson(row), pretty, meta);
      },
    );
  };

  const deleteMethod = async (req: ApiRequest): Promise<Reply> => {
    if (req.rest === '') throw agentError('ACL_MISSING_AUTH_METHOD_NAME');
    await methods.delete(req.rest);
    return jsonReply(true, req.pretty);
  };

  const listMethods = (req: ApiRequest): Outcome => {
    const pretty = req.pretty;
    return blockingRead(
      req,
      { table: ACL_AUTH_METHODS },
      () => store.tableIndex(ACL_AUTH_METHODS),
      (meta) => jsonReply(methods.list().map(authMethodStubJson), pretty, meta),
    );
  };

  const putRule = async (req: ApiRequest): Promise<Reply> => {
    const input = decodeBindingRuleBody(req.body);
    const urlId = req.rest;
    if (input.ID && input.ID !== urlId) throw agentError('ACL_BINDING_RULE_ID_MISMATCH');
    const row = await rules.upsert({ ...input, ID: input.ID || urlId });
    return jsonReply(bindingRuleJson(row), req.pretty);
  };

  const getRule = (req: ApiRequest): Outcome => {
    const id = req.rest;
    if (id === '') throw agentError('ACL_MISSING_BINDING_RULE_ID');
    const pretty = req.pretty;
    return blockingRead(
      req,
      { table: ACL_BINDING_RULES, key: id },
      () => store.keyIndex(ACL_BINDING_RULES, id),
      (meta) => {
        const row = rules.read(id);
        if (row === undefined) return errorTextReply(agentError('ACL_BINDING_RULE_READ_NOT_FOUND'), meta);
        return jsonReply(bindingRuleJson(row), pretty, meta);
      },
    );
  };

  const deleteRule = async (req: ApiRequest): Promise<Reply> => {
    if (req.rest === '') throw agentError('ACL_MISSING_BINDING_RULE_ID');
    await rules.delete(req.rest);
    return jsonReply(true, req.pretty);
  };

  const listRules = (req: ApiRequest): Outcome => {
    const authMethod = req.query.get('authmethod') ?? '';
    const pretty = req.pretty;
    return blockingRead(
      req,
      { table: ACL_BINDING_RULES },
      () => store.tableIndex(ACL_BINDING_RULES),
      (meta) => jsonReply(rules.list(authMethod).map(bindingRuleJson), pretty, meta),
    );
  };

  // A request Consul answers 400 before looking at the token (a missing name or ID) asks for nothing here either.
  const named =
    (permission: Permission) =>
    (req: ApiRequest): AclRequirement =>
      req.rest === '' ? 'none' : permission;

  return [
    { path: '/v1/acl/auth-method', aclApi: true, methods: { PUT: { handler: putMethod, acl: ACL_WRITE } } },
    {
      path: '/v1/acl/auth-method/',
      prefix: true,
      aclApi: true,
      methods: {
        GET: { handler: getMethod, acl: named(ACL_READ) },
        PUT: { handler: putMethod, acl: ACL_WRITE },
        DELETE: { handler: deleteMethod, acl: named(ACL_WRITE) },
      },
    },
    { path: '/v1/acl/auth-methods', aclApi: true, methods: { GET: { handler: listMethods, acl: ACL_READ } } },
    { path: '/v1/acl/binding-rule', aclApi: true, methods: { PUT: { handler: putRule, acl: ACL_WRITE } } },
    {
      path: '/v1/acl/binding-rule/',
      prefix: true,
      aclApi: true,
      methods: {
        GET: { handler: getRule, acl: named(ACL_READ) },
        PUT: { handler: putRule, acl: ACL_WRITE },
        DELETE: { handler: deleteRule, acl: named(ACL_WRITE) },
      },
    },
    { path: '/v1/acl/binding-rules', aclApi: true, methods: { GET: { handler: listRules, acl: ACL_READ } } },
  ];
}
