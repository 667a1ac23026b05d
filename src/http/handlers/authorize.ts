// POST /v1/agent/connect/authorize: what a proxy calls on every new connection. Thin: the
// route's parse phase answers every 400 (connect disabled, `?partition`, the body, the request
// checks) before the guard looks at the token, and the handler hands the checked request, the
// caller and `?ns`/header to the one authorize function (connect/authorize.ts), then writes the
// decision's pre-encoded bytes. No await anywhere once the body is read.
// Hot path: bench/http/authorize.ts guards it.
import { LRUCache } from 'lru-cache';
import type { Identity } from '../../acl/identity.js';
import { authorize, checkAuthorizeRequest, requireConnect, type AuthorizeDeps as DecisionDeps, type CheckedAuthorizeRequest } from '../../connect/authorize.js';
import { agentError } from '../../core/errors.js';
import type { Metrics } from '../../core/metrics.js';
import { jsonObjectDecoder } from '../body.js';
import { requestNamespaces } from '../namespace.js';
import { JSON_TYPE, jsonReply, type Header, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import { parsedMethod, type Route } from '../routes.js';

export interface AuthorizeDeps extends DecisionDeps {
  /** Destinations remembered for X-Cache (docs/decisions.md D7: every cache is bounded). */
  readonly cacheMaxEntries: number;
  readonly metrics: Metrics;
}

const DECODE_PREFIX = 'Request decode failed';
const FIELDS = ['Target', 'ClientCertURI', 'ClientCertSerial', 'Namespace'] as const;

/** The general decoder: Consul's error texts for every malformed body (EOF, arrays, unknown keys). */
const decodeSlow = jsonObjectDecoder({ prefix: DECODE_PREFIX, typeName: 'structs.ConnectAuthorizeRequest', fields: FIELDS });

/** Bodies remembered after passing the checks; ~200 B each, so at most ~1 MiB. */
const CHECKED_BODIES_MAX = 4096;

interface AuthorizeBody {
  Target: string;
  ClientCertURI: string;
  Namespace: string;
}

/**
 * The body: one JSON.parse and a switch over its keys in the usual case; anything unusual
 * (empty, not an object, keys in another case, unknown keys) goes to the general decoder, which
 * matches names case-insensitively and words every failure as Consul does.
 */
export function decodeAuthorizeBody(body: Buffer | undefined): AuthorizeBody {
  let parsed: unknown;
  try {
    parsed = body === undefined || body.length === 0 ? undefined : JSON.parse(body.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return typed(decodeSlow(body));
  const o = parsed as Record<string, unknown>;
  const out: AuthorizeBody = { Target: '', ClientCertURI: '', Namespace: '' };
  for (const key in o) {
    switch (key) {
      case 'Target':
        out.Target = stringField(o.Target, key);
        break;
      case 'ClientCertURI':
        out.ClientCertURI = stringField(o.ClientCertURI, key);
        break;
      case 'Namespace':
        out.Namespace = stringField(o.Namespace, key);
        break;
      case 'ClientCertSerial':
        stringField(o.ClientCertSerial, key);
        break;
      default:
        return typed(decodeSlow(body));
    }
  }
  return out;
}

function stringField(value: unknown, field: string): string {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'string') throw typeError(value, field);
  return value;
}

function typed(raw: Record<string, unknown>): AuthorizeBody {
  const out: AuthorizeBody = { Target: '', ClientCertURI: '', Namespace: '' };
  for (const [name, value] of Object.entries(raw)) {
    if (value === null || value === undefined) continue;
    if (typeof value !== 'string') throw typeError(value, name);
    if (name !== 'ClientCertSerial') out[name as keyof AuthorizeBody] = value;
  }
  return out;
}

function typeError(value: unknown, field: string): Error {
  const kind = Array.isArray(value) ? 'array' : typeof value === 'number' ? 'number' : typeof value === 'boolean' ? 'bool' : 'object';
  return agentError('BODY_DECODE', { prefix: DECODE_PREFIX, detail: `json: cannot unmarshal ${kind} into Go struct field ConnectAuthorizeRequest.${field} of type string` });
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

  // Proxies send the same few bodies over and over (one per client certificate and target), so a
  // body that passed the checks once is remembered, keyed by its bytes (latin1 maps bytes to
  // characters one to one): the next identical body skips JSON.parse and the SPIFFE parse. A pure
  // memo of the checks: decisions are never cached.
  const checkedBodies = new LRUCache<string, CheckedAuthorizeRequest>({ max: CHECKED_BODIES_MAX });

  /** Every 400, in Consul's order, before the token is looked at. */
  const parse = (req: ApiRequest): CheckedAuthorizeRequest => {
    requireConnect(deps.connectEnabled);
    checkPartitionQuery(req);
    const bytes = req.body;
    const key = bytes === undefined || bytes.length === 0 ? undefined : bytes.toString('latin1');
    let checked = key === undefined ? undefined : checkedBodies.get(key);
    if (checked === undefined) {
      checked = checkAuthorizeRequest(decodeAuthorizeBody(bytes));
      if (key !== undefined) checkedBodies.set(key, checked);
    }
    return checked;
  };

  const handler = (req: ApiRequest, identity: Identity, checked: CheckedAuthorizeRequest): Reply => {
    const { decision, namespace } = authorize(deps, checked, identity, requestNamespaces(req));
    const key = `${namespace}\u0000${checked.target}`;
    const hit = seen.get(key) !== undefined;
    if (!hit) seen.set(key, true);
    (decision.result.Authorized ? allowed : denied).inc();
    (hit ? cacheHit : cacheMiss).inc();
    if (req.pretty) return jsonReply(decision.result, true, hit ? HIT : MISS);
    return { status: 200, body: decision.json, contentType: JSON_TYPE, headers: hit ? HIT : MISS };
  };

  // 'resolved': the token must resolve here (403 `ACL not found`); service:write on the Target is
  // the authorize function's own step, shared with agent.authorize().
  return [{ path: '/v1/agent/connect/authorize', methods: { POST: parsedMethod({ parse, acl: 'resolved', handler }) } }];
}
