// The CA endpoints: the agent's cached roots and the servers' roots (?pem=true), the CA
// configuration (operator:read / operator:write), and a service's leaf certificate (service:write
// on every request, cache hit or not: docs/decisions.md D5). Bodies are encoded once per roots
// snapshot and once per leaf, never per request. Guarded by bench/sizing/ca.ts.
import type { Counter, Metrics } from '../../core/metrics.js';
import type { Identity } from '../../acl/identity.js';
import type { Clock } from '../../core/clock.js';
import { agentError, type AgentError } from '../../core/errors.js';
import { DEFAULT_NAMESPACE } from '../../core/namespace.js';
import type { CertificateAuthority } from '../../connect/ca/authority.js';
import { rfc3339 } from '../../connect/ca/encoding.js';
import type { CachedLeaf, LeafManager } from '../../connect/ca/leaf-manager.js';
import { ROOTS_TABLE } from '../../connect/ca/model.js';
import type { RootsCache } from '../../connect/ca/roots-cache.js';
import type { RootsSnapshot } from '../../connect/ca/roots-view.js';
import type { BlockingLimits, BlockingQueries } from '../blocking.js';
import { parseBlockingParams, queryMetaHeaders } from '../blocking.js';
import { jsonObjectDecoder } from '../body.js';
import type { BrandHeaders } from '../brand.js';
import { Uint64 } from '../../core/go-json.js';
import { requestNamespace } from '../namespace.js';
import { encodeJson } from '../json.js';
import { EMPTY_OK, JSON_TYPE, jsonReply, type Header, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { Outcome, Permission, Route } from '../routes.js';

/** The CA's parts; all undefined when `connect.enabled` is false. */
export interface ConnectCa {
  readonly manager: CertificateAuthority;
  readonly roots: RootsCache;
  readonly leaves: LeafManager;
}

export interface ConnectCaDeps {
  readonly ca: ConnectCa | undefined;
  readonly blocking: BlockingQueries;
  readonly brand: BrandHeaders;
  readonly limits: BlockingLimits;
  readonly clock: Clock;
  readonly random: () => number;
  readonly metrics: Metrics;
}

export const PEM_CHAIN_TYPE = 'application/pem-certificate-chain';

const connectDisabled = (): AgentError => agentError('CONNECT_DISABLED');

/**
 * Body bytes memoised per immutable object (a roots snapshot, a cached leaf). Kept as Buffers, off
 * the V8 heap: a wave of first leaves keeps a body per leaf, which as strings every young-generation
 * collection would copy.
 */
class EncodedOnce<T extends object> {
  private readonly memo = new WeakMap<T, { compact?: Buffer; pretty?: Buffer }>();
  constructor(private readonly toJson: (value: T) => unknown) {}

  get(value: T, pretty: boolean): Buffer {
    let entry = this.memo.get(value);
    if (entry === undefined) this.memo.set(value, (entry = {}));
    if (pretty) return (entry.pretty ??= Buffer.from(encodeJson(this.toJson(value), true)));
    return (entry.compact ??= Buffer.from(encodeJson(this.toJson(value), false)));
  }
}

const rootsBody = new EncodedOnce<RootsSnapshot>((s) => ({
  ActiveRootID: s.activeRootId,
  TrustDomain: s.trustDomain,
  Roots: s.roots.map(({ value: r, createIndex, modifyIndex }) => ({
    ID: r.ID,
    Name: r.Name,
    SerialNumber: new Uint64(r.SerialNumber),
    SigningKeyID: r.SigningKeyID,
    ExternalTrustDomain: r.ExternalTrustDomain,
    NotBefore: r.NotBefore,
    NotAfter: r.NotAfter,
    RootCert: r.RootCert,
    IntermediateCerts: r.IntermediateCerts,
    Active: r.Active,
    PrivateKeyType: r.PrivateKeyType,
    PrivateKeyBits: r.PrivateKeyBits,
    CreateIndex: createIndex,
    ModifyIndex: modifyIndex,
  })),
}));

const leafBody = new EncodedOnce<CachedLeaf>((leaf) => ({
  SerialNumber: leaf.serialNumber,
  CertPEM: leaf.certPem,
  PrivateKeyPEM: leaf.privateKeyPem,
  Service: leaf.service,
  ServiceURI: leaf.uri,
  ValidAfter: rfc3339(leaf.validAfter),
  ValidBefore: rfc3339(leaf.validBefore),
  CreateIndex: leaf.index,
  ModifyIndex: leaf.index,
}));

const decodeConfiguration = jsonObjectDecoder({
  prefix: 'Request decode failed',
  typeName: 'structs.CAConfiguration',
  fields: [
    'ClusterID',
    'Provider',
    'Config',
    'State',
    'ForceWithoutCrossSigning',
    'force_without_cross_signing',
    'CreateIndex',
    'ModifyIndex',
  ],
});

/** Go's strconv.ParseBool. */
function parseBool(text: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(text)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(text)) return false;
  return undefined;
}

function goType(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'boolean') return 'bool';
  return typeof value;
}

function fieldError(field: string, value: unknown, want: string): AgentError {
  return agentError('BODY_DECODE', {
    prefix: 'Request decode failed',
    detail: `json: cannot unmarshal ${goType(value)} into Go struct field CAConfiguration.${field} of type ${want}`,
  });
}

const serviceWrite: Permission = { resource: 'service', access: 'write', name: (req) => req.rest };
const operatorRead: Permission = { resource: 'operator', access: 'read' };
const operatorWrite: Permission = { resource: 'operator', access: 'write' };

export function connectCaRoutes(deps: ConnectCaDeps): Route[] {
  const { brand } = deps;
  const need = (): ConnectCa => {
    if (deps.ca === undefined) throw connectDisabled();
    return deps.ca;
  };

  const cacheHeaders = (hit: boolean, ageSec: number): Header[] =>
    hit
      ? [
          ['X-Cache', 'HIT'],
          ['Age', String(ageSec)],
        ]
      : [['X-Cache', 'MISS']];
  const counted = (prefix: string): { hit: Counter; miss: Counter } => ({
    hit: deps.metrics.counter(`${prefix}.cache_hit`),
    miss: deps.metrics.counter(`${prefix}.cache_miss`),
  });
  const rootsCache = counted('svc.connect.ca.roots');
  const leafCache = counted('svc.connect.ca.leaf');

  const agentRoots = (req: ApiRequest): Outcome => {
    const { roots } = need();
    const params = parseBlockingParams(req.query, deps.limits, deps.random);
    const pretty = req.pretty;
    const render = (a: { snapshot: RootsSnapshot; hit: boolean; ageSec: number }): Reply => {
      (a.hit ? rootsCache.hit : rootsCache.miss).inc();
      return jsonBody(rootsBody.get(a.snapshot, pretty), [
        ...queryMetaHeaders(brand, a.snapshot.index),
        ...cacheHeaders(a.hit, a.ageSec),
      ]);
    };
    const now = roots.get(); // the first request fills the cache, and fails while it cannot
    const { minIndex } = params;
    if (minIndex === 0 || now.snapshot.index > minIndex) return render(now);
    // Parked on the cache's index: newer roots wake it (a MISS), the wait's end answers the cached ones (a HIT).
    return deps.blocking.answer(req, params, {
      target: (fn) => roots.watchOnce(fn),
      index: () => roots.get().snapshot.index,
      render: (index) =>
        render(index > minIndex ? { snapshot: roots.get().snapshot, hit: false, ageSec: 0 } : roots.get()),
    });
  };

  const serverRoots = (req: ApiRequest): Outcome => {
    const { manager } = need();
    const pemParam = req.query.get('pem');
    let pem = false;
    if (pemParam !== undefined && pemParam !== '') {
      const parsed = parseBool(pemParam);
      if (parsed === undefined) throw agentError('CA_BAD_PEM_PARAM');
      pem = parsed;
    }
    const params = parseBlockingParams(req.query, deps.limits, deps.random);
    const pretty = req.pretty;
    return deps.blocking.answer(req, params, {
      target: { table: ROOTS_TABLE },
      shareKey: `ca-roots:${pem}:${pretty}`,
      index: () => manager.rootsIndex(),
      render(index) {
        const snapshot = manager.roots();
        const headers = queryMetaHeaders(brand, index);
        if (pem) return { status: 200, body: snapshot.pem, contentType: PEM_CHAIN_TYPE, headers };
        return jsonBody(rootsBody.get(snapshot, pretty), headers);
      },
    });
  };

  const getConfiguration = (req: ApiRequest): Reply => {
    const row = need().manager.configuration();
    const c = row.value;
    return jsonReply(
      {
        Provider: c.Provider,
        Config: c.Config,
        State: null,
        ForceWithoutCrossSigning: c.ForceWithoutCrossSigning,
        CreateIndex: row.createIndex,
        ModifyIndex: row.modifyIndex,
      },
      req.pretty,
    );
  };

  const putConfiguration = async (req: ApiRequest): Promise<Reply> => {
    const { manager } = need();
    const body = decodeConfiguration(req.body);
    const provider = body.Provider ?? '';
    if (typeof provider !== 'string') throw fieldError('Provider', provider, 'string');
    const config = body.Config ?? {};
    if (typeof config !== 'object' || Array.isArray(config))
      throw fieldError('Config', config, 'map[string]interface {}');
    const force = body.ForceWithoutCrossSigning ?? body.force_without_cross_signing ?? false;
    if (typeof force !== 'boolean') throw fieldError('ForceWithoutCrossSigning', force, 'bool');
    await manager.updateConfiguration({
      provider,
      config: config as Record<string, unknown>,
      state: body.State ?? null,
      forceWithoutCrossSigning: force,
    });
    return EMPTY_OK;
  };

  const leaf = (req: ApiRequest, identity: Identity): Outcome => {
    const { leaves } = need();
    const service = req.rest;
    if (service === '') throw agentError('LEAF_MISSING_SERVICE');
    const params = parseBlockingParams(req.query, deps.limits, deps.random);
    const namespace = requestNamespace(req, identity.namespace, DEFAULT_NAMESPACE);
    const pretty = req.pretty;
    const render = (a: { leaf: CachedLeaf; hit: boolean }): Reply => {
      (a.hit ? leafCache.hit : leafCache.miss).inc();
      const age = Math.max(0, Math.round((deps.clock.now() - a.leaf.issuedAt) / 1000));
      return jsonBody(leafBody.get(a.leaf, pretty), [[brand.index, String(a.leaf.index)], ...cacheHeaders(a.hit, age)]);
    };
    const watch = leaves.waitFor(namespace, service, params.minIndex, identity.secret);
    if (watch !== undefined) {
      // Parked like any blocking read; a newer leaf wakes it (a MISS), the wait's end answers the same leaf (a HIT).
      const { minIndex } = params;
      return deps.blocking.answer(req, params, {
        target: (fn) => watch.watchOnce(fn),
        index: () => watch.leaf.index,
        render: (index) => render({ leaf: watch.leaf, hit: index <= minIndex }),
      });
    }
    const answer = leaves.get(namespace, service, identity.secret);
    return answer instanceof Promise ? answer.then(render) : render(answer);
  };

  return [
    { path: '/v1/agent/connect/ca/roots', methods: { GET: { handler: agentRoots, acl: 'none' } } },
    { path: '/v1/connect/ca/roots', methods: { GET: { handler: serverRoots, acl: 'none' } } },
    {
      path: '/v1/connect/ca/configuration',
      methods: {
        GET: { handler: getConfiguration, acl: operatorRead },
        PUT: { handler: putConfiguration, acl: operatorWrite },
      },
    },
    { path: '/v1/agent/connect/ca/leaf/', prefix: true, methods: { GET: { handler: leaf, acl: serviceWrite } } },
  ];
}

function jsonBody(body: Uint8Array, headers: readonly Header[]): Reply {
  return { status: 200, body, contentType: JSON_TYPE, headers };
}
