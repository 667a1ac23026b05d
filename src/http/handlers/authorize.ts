// POST /v1/agent/connect/authorize: what a proxy calls on every new connection. Thin: the
// route's parse phase answers every 400 (connect disabled, `?partition`, the body, the request
// checks) before the guard looks at the token, and the handler hands the checked request, the
// caller and `?ns`/header to the one authorize function (connect/authorize.ts), then writes the
// decision's pre-encoded bytes. No await anywhere once the body is read.
// Hot path: bench/sizing/authorize.ts guards it.
import { LRUCache } from 'lru-cache';
import type { Identity } from '../../acl/identity.js';
import {
  authorize,
  checkAuthorizeRequest,
  requireConnect,
  type AuthorizeDeps as DecisionDeps,
  type CheckedAuthorizeRequest,
} from '../../connect/authorize.js';
import { agentError } from '../../core/errors.js';
import type { Metrics } from '../../core/metrics.js';
import { requestNamespaces } from '../namespace.js';
import { decodeAuthorizeBody } from './authorize-body.js';
import { JSON_TYPE, jsonReply, type Header, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import { parsedMethod, type Route } from '../routes.js';

export interface AuthorizeDeps extends DecisionDeps {
  /** Destinations remembered for X-Cache (docs/decisions.md D7: every cache is bounded). */
  readonly cacheMaxEntries: number;
  readonly metrics: Metrics;
}

/** `?partition=` other than default is refused before the body is read, as Consul CE does. */
export function checkPartitionQuery(req: ApiRequest): void {
  if (req.head.rawQuery === '') return;
  const partition = req.query.get('partition');
  if (partition && partition !== 'default') {
    throw agentError('PARTITION_UNSUPPORTED');
  }
}

const MISS: readonly Header[] = Object.freeze([['X-Cache', 'MISS'] as const]);
// The index is rebuilt in-process on every write, so a hit is never stale: Age is always 0.
const HIT: readonly Header[] = Object.freeze([['X-Cache', 'HIT'] as const, ['Age', '0'] as const]);

export function authorizeRoutes(deps: AuthorizeDeps): Route[] {
  const seen = new LRUCache<string, true>({ max: deps.cacheMaxEntries });
  deps.metrics.gauge('svc.connect.authorize.cache_entries', () => seen.size);
  const allowed = deps.metrics.counter('svc.connect.authorize.allowed');
  const denied = deps.metrics.counter('svc.connect.authorize.denied');
  const cacheHit = deps.metrics.counter('svc.connect.authorize.cache_hit');
  const cacheMiss = deps.metrics.counter('svc.connect.authorize.cache_miss');

  // No memo of bodies: real proxies send a new serial per certificate, and a body read on the
  // compact path costs about what hashing it for a memo would (bench/micro/authorize-calls.ts).
  /** Every 400, in Consul's order, before the token is looked at. */
  const parse = (req: ApiRequest): CheckedAuthorizeRequest => {
    requireConnect(deps.connectEnabled);
    checkPartitionQuery(req);
    return checkAuthorizeRequest(decodeAuthorizeBody(req.body));
  };

  const handler = (req: ApiRequest, identity: Identity, checked: CheckedAuthorizeRequest): Reply => {
    const { decision, namespace } = authorize(deps, checked, identity, requestNamespaces(req));
    const key = `${namespace}\u0000${checked.target}`;
    const hit = seen.get(key) !== undefined;
    if (!hit) seen.set(key, true);
    (decision.authorized ? allowed : denied).inc();
    (hit ? cacheHit : cacheMiss).inc();
    if (req.pretty) return jsonReply(decision.result, true, hit ? HIT : MISS);
    return { status: 200, body: decision.json, contentType: JSON_TYPE, headers: hit ? HIT : MISS };
  };

  // 'resolved': the token must resolve here (403 `ACL not found`); service:write on the Target is
  // the authorize function's own step, shared with agent.authorize().
  return [
    {
      path: '/v1/agent/connect/authorize',
      methods: { POST: parsedMethod({ parse, acl: 'resolved', handler, readsOnly: true }) },
    },
  ];
}
