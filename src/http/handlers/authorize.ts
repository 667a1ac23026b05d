// POST /v1/agent/connect/authorize (reference §3): what a proxy calls on every new connection.
// Thin: the body is decoded and checked in the route's ACL step, which declares service:write
// on the Target (so the guard enforces it between the 400s and the decision, in Consul's order),
// and the handler resolves the namespace, asks the index and writes the decision's pre-encoded
// bytes. No await anywhere once the body is read. Hot path: bench/http/authorize.ts guards it.
import { LRUCache } from 'lru-cache';
import type { Identity } from '../../acl/identity.js';
import { checkAuthorizeRequest, checkPartition, decide } from '../../connect/authorize.js';
import { CONNECT_DISABLED } from '../../connect/authorizer.js';
import type { IntentionStore } from '../../connect/intentions/store.js';
import type { SpiffeService } from '../../connect/spiffe.js';
import { invalid } from '../../core/errors.js';
import type { Metrics } from '../../core/metrics.js';
import { jsonObjectDecoder } from '../body.js';
import { JSON_TYPE, jsonReply, type Header, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { Permission, Route } from '../routes.js';

export interface AuthorizeDeps {
  readonly intentions: IntentionStore;
  readonly connectEnabled: boolean;
  /** Destinations remembered for X-Cache (decision D7: every cache is bounded). */
  readonly cacheMaxEntries: number;
  readonly metrics: Metrics;
}

const DECODE_PREFIX = 'Request decode failed';
const FIELDS = ['Target', 'ClientCertURI', 'ClientCertSerial', 'Namespace'] as const;

/** The general decoder: Consul's error texts for every malformed body (EOF, arrays, unknown keys). */
const decodeSlow = jsonObjectDecoder({ prefix: DECODE_PREFIX, typeName: 'structs.ConnectAuthorizeRequest', fields: FIELDS });

/** Bodies remembered after passing the checks; ~200 B each, so at most ~1 MiB. */
const CHECKED_BODIES_MAX = 4096;

interface CheckedBody {
  readonly target: string;
  readonly namespace: string;
  readonly source: SpiffeService;
}

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
  return invalid('BODY_DECODE', `${DECODE_PREFIX}: json: cannot unmarshal ${kind} into Go struct field ConnectAuthorizeRequest.${field} of type string`);
}

/** `?partition=` other than default is refused before the body is read, as Consul CE does. */
export function checkPartitionQuery(req: ApiRequest): void {
  if (req.head.rawQuery === '') return;
  const partition = req.query.get('partition');
  if (partition && partition !== 'default') {
    throw invalid('PARTITION_UNSUPPORTED', 'Invalid query parameter: "partition" - Partitions are a Consul Enterprise feature');
  }
}

/**
 * Namespace resolution, first match wins (the spec, decision D2): body, `?ns`, the namespace
 * header, the token's namespace, `default`.
 */
export function resolveNamespace(bodyNamespace: string, req: ApiRequest, identity: Identity): string {
  if (bodyNamespace !== '') return bodyNamespace;
  if (req.head.rawQuery !== '') {
    const ns = req.query.get('ns');
    if (ns) return ns;
  }
  return req.head.namespaceHeader || identity.namespace || 'default';
}

const MISS: readonly Header[] = Object.freeze([['X-Cache', 'MISS'] as const]);
// The index is rebuilt in-process on every write, so a hit is never stale: Age is always 0.
const HIT: readonly Header[] = Object.freeze([['X-Cache', 'HIT'] as const, ['Age', '0'] as const]);

export function authorizeRoutes(deps: AuthorizeDeps): Route[] {
  const { intentions, connectEnabled } = deps;
  const seen = new LRUCache<string, true>({ max: deps.cacheMaxEntries });
  const allowed = deps.metrics.counter('svc.connect.authorize.allowed');
  const denied = deps.metrics.counter('svc.connect.authorize.denied');
  const cacheHit = deps.metrics.counter('svc.connect.authorize.cache_hit');
  const cacheMiss = deps.metrics.counter('svc.connect.authorize.cache_miss');

  // Proxies send the same few bodies over and over (one per client certificate and target), so a
  // body that passed the checks once is remembered, keyed by its bytes (latin1 maps bytes to
  // characters one to one): the next identical body skips JSON.parse and the SPIFFE parse
  // (~0.5 µs of the ~1 µs the handler took). A pure memo: decisions are never cached.
  const checkedBodies = new LRUCache<string, CheckedBody>({ max: CHECKED_BODIES_MAX });

  // The guard calls the ACL step and then the handler synchronously, in one call stack, so the
  // checked body travels from one to the other in this one slot, tagged with its request.
  let slotRequest: ApiRequest | undefined;
  let slot: CheckedBody | undefined;

  const writeTarget: Permission = { resource: 'service', access: 'write', name: () => (slot as CheckedBody).target };

  /** Steps 1-6 of §3.2 (every 400), then service:write on the Target for the guard to enforce. */
  const acl = (req: ApiRequest): Permission => {
    if (!connectEnabled) throw invalid('CONNECT_DISABLED', CONNECT_DISABLED);
    checkPartitionQuery(req);
    const bytes = req.body;
    const key = bytes === undefined || bytes.length === 0 ? undefined : bytes.toString('latin1');
    let checked = key === undefined ? undefined : checkedBodies.get(key);
    if (checked === undefined) {
      const body = decodeAuthorizeBody(bytes);
      const source = checkAuthorizeRequest(body.Target, body.ClientCertURI);
      checked = { target: body.Target, namespace: body.Namespace, source };
      if (key !== undefined) checkedBodies.set(key, checked);
    }
    slotRequest = req;
    slot = checked;
    return writeTarget;
  };

  const handler = (req: ApiRequest, identity: Identity): Reply => {
    const checked = slot;
    if (slotRequest !== req || checked === undefined) throw new Error('authorize: the checked request is missing');
    slotRequest = undefined;
    checkPartition(checked.source);
    const namespace = resolveNamespace(checked.namespace, req, identity);
    const decision = decide(intentions.current(), namespace, checked.target, checked.source, identity.authorizer.defaultAllow);
    const key = `${namespace}\u0000${checked.target}`;
    const hit = seen.get(key) !== undefined;
    if (!hit) seen.set(key, true);
    (decision.result.Authorized ? allowed : denied).inc();
    (hit ? cacheHit : cacheMiss).inc();
    if (req.pretty) return jsonReply(decision.result, true, hit ? HIT : MISS);
    return { status: 200, body: decision.json, contentType: JSON_TYPE, headers: hit ? HIT : MISS };
  };

  return [{ path: '/v1/agent/connect/authorize', methods: { POST: { acl, handler } } }];
}
