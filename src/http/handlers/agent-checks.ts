// /v1/agent/checks and /v1/agent/check/{register,deregister/:id,pass|warn|fail/:id,update/:id}:
// the checks this agent runs (src/local/). A check's writes need write on its service, or on this
// node for a node check, as Consul's vetCheckRegister and vetCheckUpdate ask.
import { requirePermission, type Identity } from '../../acl/identity.js';
import { compileFilter } from '../../core/bexpr.js';
import { agentError } from '../../core/errors.js';
import { readCheckDefinition } from '../../local/definition.js';
import type { LocalAgent } from '../../local/local-agent.js';
import { HEALTH_STATUSES, type HealthStatus, type LocalCheck } from '../../local/model.js';
import type { BrandHeaders } from '../brand.js';
import { EMPTY_OK, jsonReply, type Header, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import { parsedMethod, type Route } from '../routes.js';
import { requestToken } from '../token.js';
import { decodeObjectBody } from './local-body.js';
import { agentCheckJson } from './local-json.js';

export interface LocalCheckDeps {
  readonly local: LocalAgent;
  readonly brand: BrandHeaders;
}

const CHECK_FIELDS = new Set([
  'Node',
  'CheckID',
  'Name',
  'Status',
  'Notes',
  'Output',
  'ServiceID',
  'ServiceName',
  'ServiceTags',
  'Type',
  'Interval',
  'Timeout',
  'ExposedPort',
]);

export function agentCheckRoutes({ local, brand }: LocalCheckDeps): Route[] {
  const state = local.state;
  const node = state.nodeName;

  const canRead = (identity: Identity, c: LocalCheck): boolean =>
    c.serviceId === ''
      ? identity.authorizer.allowed('node', 'read', node)
      : identity.authorizer.allowed('service', 'read', c.serviceName);

  /** Write on the check's service, or on this node for a node check. */
  const requireWrite = (identity: Identity, serviceName: string): void =>
    serviceName === ''
      ? requirePermission(identity, 'node', 'write', node)
      : requirePermission(identity, 'service', 'write', serviceName);

  const list = (req: ApiRequest, identity: Identity): Reply => {
    const filter = req.query.get('filter');
    const predicate = filter ? compileFilter(filter, CHECK_FIELDS) : undefined;
    const all = [...state.checks()].map((c) => ({ c, json: agentCheckJson(c, node) }));
    const matched = predicate === undefined ? all : all.filter((e) => predicate(e.json));
    const visible = matched.filter((e) => canRead(identity, e.c));
    const headers: Header[] =
      visible.length < matched.length && requestToken(req) !== undefined ? [[brand.resultsFilteredByAcls, 'true']] : [];
    return jsonReply(Object.fromEntries(visible.map((e) => [e.c.checkId, e.json])), req.pretty, headers);
  };

  const ttlUpdate = async (
    req: ApiRequest,
    identity: Identity,
    status: HealthStatus,
    output: string,
  ): Promise<Reply> => {
    const check = local.existingCheck(req.rest);
    requireWrite(identity, check.serviceName);
    await local.updateTtl(check.checkId, status, output);
    return EMPTY_OK;
  };
  const byNote =
    (status: HealthStatus) =>
    (req: ApiRequest, identity: Identity): Promise<Reply> =>
      ttlUpdate(req, identity, status, req.query.get('note') ?? '');

  return [
    { path: '/v1/agent/checks', methods: { GET: { acl: 'resolved', handler: list } } },
    {
      path: '/v1/agent/check/register',
      methods: {
        PUT: parsedMethod({
          parse: (req) => readCheckDefinition(decodeObjectBody(req.body)),
          acl: 'resolved',
          handler: async (_req, identity, def) => {
            local.validateCheck(def);
            requireWrite(identity, def.serviceId === '' ? '' : (state.service(def.serviceId)?.service ?? ''));
            await local.registerCheck(def);
            return EMPTY_OK;
          },
        }),
      },
    },
    {
      path: '/v1/agent/check/deregister/',
      prefix: true,
      methods: {
        PUT: {
          acl: 'resolved',
          handler: async (req, identity) => {
            const check = local.existingCheck(req.rest);
            requireWrite(identity, check.serviceName);
            await local.deregisterCheck(check.checkId);
            return EMPTY_OK;
          },
        },
      },
    },
    { path: '/v1/agent/check/pass/', prefix: true, methods: { PUT: { acl: 'resolved', handler: byNote('passing') } } },
    { path: '/v1/agent/check/warn/', prefix: true, methods: { PUT: { acl: 'resolved', handler: byNote('warning') } } },
    { path: '/v1/agent/check/fail/', prefix: true, methods: { PUT: { acl: 'resolved', handler: byNote('critical') } } },
    {
      path: '/v1/agent/check/update/',
      prefix: true,
      methods: {
        PUT: parsedMethod({
          parse: (req) => {
            const body = decodeObjectBody(req.body);
            // Go's decoder matches field names whatever their case.
            const field = (name: string): unknown => Object.entries(body).find(([k]) => k.toLowerCase() === name)?.[1];
            const status = field('status');
            const output = field('output');
            const text = typeof status === 'string' ? status : '';
            if (!HEALTH_STATUSES.has(text)) throw agentError('CHECK_UPDATE_STATUS', { status: text });
            return { status: text as HealthStatus, output: typeof output === 'string' ? output : '' };
          },
          acl: 'resolved',
          handler: (req, identity, update) => ttlUpdate(req, identity, update.status, update.output),
        }),
      },
    },
  ];
}
