// /v1/agent/services, /v1/agent/service/{register,deregister/:id,maintenance/:id,:id},
// /v1/agent/health/service/{id/:id,name/:name} and the node's /v1/agent/maintenance: the agent's
// local services (src/local/). Thin: decode, ask the ACL, call LocalAgent, shape the answer as Consul does.
import { requirePermission, type Identity } from '../../acl/identity.js';
import { compileFilter } from '../../core/bexpr.js';
import { agentError } from '../../core/errors.js';
import { readServiceDefinition } from '../../local/definition.js';
import type { AggregatedStatus, LocalAgent } from '../../local/local-agent.js';
import type { LocalService } from '../../local/model.js';
import { parseBlockingParams, type BlockingLimits, type BlockingQueries } from '../blocking.js';
import type { BrandHeaders } from '../brand.js';
import { encodeJson } from '../json.js';
import { EMPTY_OK, JSON_TYPE, jsonReply, textReply, type Header, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import { parsedMethod, type Route } from '../routes.js';
import { requestToken } from '../token.js';
import { decodeObjectBody, parseGoBool } from './local-body.js';
import { agentCheckJson, agentServiceJson, withContentHash } from './local-json.js';

export interface LocalServiceDeps {
  readonly local: LocalAgent;
  readonly brand: BrandHeaders;
  readonly datacenter: string;
  readonly blocking: BlockingQueries;
  readonly limits: BlockingLimits;
  readonly random: () => number;
}

const SERVICE_FIELDS = new Set([
  'Kind',
  'ID',
  'Service',
  'Tags',
  'Meta',
  'Port',
  'Address',
  'TaggedAddresses',
  'Weights',
  'EnableTagOverride',
  'Proxy',
  'Connect',
]);
const SERVICE_MAPS = new Set(['Meta', 'TaggedAddresses', 'Weights', 'Proxy', 'Connect']);

/** Consul's status code for an aggregated status: 200 passing, 429 warning, 503 otherwise. */
const STATUS_CODE = (status: AggregatedStatus): number =>
  status === 'passing' ? 200 : status === 'warning' ? 429 : 503;

export function agentServiceRoutes(deps: LocalServiceDeps): Route[] {
  const { local, brand, datacenter } = deps;
  const state = local.state;
  const canRead = (identity: Identity, s: LocalService): boolean =>
    identity.authorizer.allowed('service', 'read', s.service);

  const list = (req: ApiRequest, identity: Identity): Reply => {
    const filter = req.query.get('filter');
    const predicate = filter ? compileFilter(filter, SERVICE_FIELDS, SERVICE_MAPS) : undefined;
    const all = [...state.services()].map((s) => ({ s, json: agentServiceJson(s, datacenter) }));
    const matched = predicate === undefined ? all : all.filter((e) => predicate(e.json));
    const visible = matched.filter((e) => canRead(identity, e.s));
    // Told only to a caller that gave a token, as Consul's agent endpoints do.
    const headers: Header[] =
      visible.length < matched.length && requestToken(req) !== undefined ? [[brand.resultsFilteredByAcls, 'true']] : [];
    return jsonReply(Object.fromEntries(visible.map((e) => [e.s.id, e.json])), req.pretty, headers);
  };

  /** One service, blocking until its content hash differs from `?hash` (or the wait ends). */
  const one = (req: ApiRequest, identity: Identity): ReturnType<BlockingQueries['answer']> => {
    const id = req.rest;
    const current = (): { json: Record<string, unknown>; hash: string } => {
      const service = state.service(id);
      if (service === undefined) throw agentError('SERVICE_NOT_FOUND', { id });
      requirePermission(identity, 'service', 'read', service.service);
      return withContentHash(agentServiceJson(service, datacenter));
    };
    const params = parseBlockingParams(req.query, deps.limits, deps.random);
    const now = current();
    const hash = req.query.get('hash');
    const minIndex = hash !== undefined && hash === now.hash ? state.serviceVersion(id) : 0;
    return deps.blocking.answer(
      req,
      { minIndex, timeoutMs: params.timeoutMs },
      {
        target: (fn) => state.watchService(id, fn),
        index: () => state.serviceVersion(id),
        render: () => {
          const { json, hash: h } = current();
          return jsonReply(json, req.pretty, [[brand.contentHash, h]]);
        },
      },
    );
  };

  /** `?enable` as Consul's maintenance endpoints read it: present, and a Go bool. */
  const enableOf = (req: ApiRequest): boolean => {
    if (!req.query.has('enable')) throw agentError('SERVICE_MAINTENANCE_NO_ENABLE');
    const raw = req.query.get('enable') ?? '';
    const enable = parseGoBool(raw);
    if (enable === undefined) throw agentError('SERVICE_MAINTENANCE_BAD_ENABLE', { value: raw });
    return enable;
  };

  const healthReply = (req: ApiRequest, code: number, status: string, body: unknown): Reply =>
    req.query.get('format') === 'text'
      ? textReply(code, status)
      : { status: code, body: encodeJson(body, req.pretty), contentType: JSON_TYPE };

  const serviceInfo = (s: LocalService): { status: AggregatedStatus; info: Record<string, unknown> } => {
    const health = local.serviceHealth(s.id);
    return {
      status: health.status,
      info: {
        AggregatedStatus: health.status,
        Service: agentServiceJson(s, datacenter),
        Checks: health.checks.map((c) => agentCheckJson(c, state.nodeName)),
      },
    };
  };

  const healthById = (req: ApiRequest, identity: Identity): Reply => {
    const id = req.rest;
    if (id === '') throw agentError('HEALTH_MISSING_SERVICE_ID');
    const service = state.service(id);
    if (service === undefined) {
      const reason = `ServiceId ${id} not found`;
      return healthReply(req, 404, reason, { AggregatedStatus: 'critical', Service: null, Checks: null });
    }
    requirePermission(identity, 'service', 'read', service.service);
    const { status, info } = serviceInfo(service);
    return healthReply(req, STATUS_CODE(status), status, info);
  };

  const healthByName = (req: ApiRequest, identity: Identity): Reply => {
    const name = req.rest;
    if (name === '') throw agentError('HEALTH_MISSING_SERVICE_NAME');
    requirePermission(identity, 'service', 'read', name);
    let code = 404;
    let text = `ServiceName ${name} Not Found`;
    const result = state.servicesByName(name).map((s) => {
      const { status, info } = serviceInfo(s);
      const scode = STATUS_CODE(status);
      // The worst wins: passing 200 < warning 429 < critical 503.
      if (code === 404 || code < scode) {
        code = scode;
        text = status;
      }
      return info;
    });
    return healthReply(req, code, text, result);
  };

  return [
    { path: '/v1/agent/services', methods: { GET: { acl: 'resolved', handler: list } } },
    { path: '/v1/agent/service/', prefix: true, methods: { GET: { acl: 'resolved', handler: one } } },
    {
      path: '/v1/agent/service/register',
      methods: {
        PUT: parsedMethod({
          parse: (req) => readServiceDefinition(decodeObjectBody(req.body)),
          acl: 'resolved',
          handler: async (req, identity, def) => {
            local.validateService(def);
            requirePermission(identity, 'service', 'write', def.name);
            const sidecar = local.sidecarName(def);
            if (sidecar !== undefined) requirePermission(identity, 'service', 'write', sidecar);
            const replace = req.query.has('replace-existing-checks');
            const value = req.query.get('replace-existing-checks');
            await local.registerService(def, { replaceExistingChecks: replace && (value === '' || value === 'true') });
            return EMPTY_OK;
          },
        }),
      },
    },
    {
      path: '/v1/agent/service/deregister/',
      prefix: true,
      methods: {
        PUT: {
          acl: 'resolved',
          handler: async (req, identity) => {
            const service = local.existingService(req.rest);
            requirePermission(identity, 'service', 'write', service.service);
            await local.deregisterService(service.id);
            return EMPTY_OK;
          },
        },
      },
    },
    {
      path: '/v1/agent/service/maintenance/',
      prefix: true,
      methods: {
        PUT: {
          acl: 'resolved',
          handler: async (req, identity) => {
            if (req.rest === '') throw agentError('SERVICE_MISSING_ID');
            const enable = enableOf(req);
            const service = local.existingService(req.rest);
            requirePermission(identity, 'service', 'write', service.service);
            await local.setMaintenance(service.id, enable, req.query.get('reason') ?? '');
            return EMPTY_OK;
          },
        },
      },
    },
    {
      path: '/v1/agent/maintenance',
      methods: {
        PUT: {
          acl: 'resolved',
          handler: async (req, identity) => {
            const enable = enableOf(req);
            requirePermission(identity, 'node', 'write', state.nodeName);
            await local.setNodeMaintenance(enable, req.query.get('reason') ?? '');
            return EMPTY_OK;
          },
        },
      },
    },
    {
      path: '/v1/agent/health/service/id/',
      prefix: true,
      methods: { GET: { acl: 'resolved', handler: healthById } },
    },
    {
      path: '/v1/agent/health/service/name/',
      prefix: true,
      methods: { GET: { acl: 'resolved', handler: healthByName } },
    },
  ];
}
