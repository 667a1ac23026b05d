// What the catalog and health reads share: the consistency flags, the blocking read on the index
// of the answer's own data (docs/decisions.md D6), the rendered answer kept until that data moves
// (render-cache.ts), `?filter`, `?node-meta`, and the ACL filter that drops what the token may not
// read and says so in a header.
import type { Identity } from '../../acl/identity.js';
import type { CatalogQueries } from '../../catalog/queries.js';
import { compileFilter, type Predicate } from '../../core/bexpr.js';
import { agentError } from '../../core/errors.js';
import type { StateStore, WatchTarget } from '../../state/types.js';
import type { BlockingLimits, BlockingQueries, Parked, WatchSource } from '../blocking.js';
import { parseBlockingParams, queryMetaHeaders } from '../blocking.js';
import type { BrandHeaders } from '../brand.js';
import { encodeJson } from '../json.js';
import type { RenderCache } from '../render-cache.js';
import { JSON_TYPE, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';

export interface CatalogReadDeps {
  readonly store: StateStore;
  readonly queries: CatalogQueries;
  readonly blocking: BlockingQueries;
  readonly brand: BrandHeaders;
  readonly limits: BlockingLimits;
  readonly random: () => number;
  readonly renders: RenderCache;
}

/** What a read answers: the value to encode and whether the ACL filter removed anything. */
export interface Answer {
  readonly value: unknown;
  readonly filtered: boolean;
}

export interface CatalogRead {
  /** The rows whose change changes the answer (an index row, or a whole table). */
  readonly target: WatchTarget;
  /** Parts of the request the answer depends on, besides the path (the token is added here). */
  readonly variant: string;
  /**
   * A table the answer also reads beyond its target (a node's Meta for a list of services or
   * checks): the answer's index is the greater of the two (Consul's ServicesByNodeMeta takes the
   * services' and the nodes' max), and a change to either wakes a parked read.
   */
  readonly alsoReads?: string;
  answer(): Answer;
}

/** `?stale` and `?consistent` together are refused, as Consul does; the view answers both. */
function effectiveConsistency(req: ApiRequest): string {
  const stale = req.query.has('stale');
  const consistent = req.query.has('consistent');
  if (stale && consistent) throw agentError('CONSISTENCY_CONFLICT');
  return consistent ? 'consistent' : stale ? 'stale' : 'leader';
}

export function answerRead(
  deps: CatalogReadDeps,
  req: ApiRequest,
  identity: Identity,
  read: CatalogRead,
): Reply | Parked {
  const consistency = effectiveConsistency(req);
  const params = parseBlockingParams(req.query, deps.limits, deps.random);
  const { store, brand, renders } = deps;
  const { target, alsoReads } = read;
  const pretty = req.pretty;
  const path = req.head.path;
  // Everything that shapes the body: the ACL view, the form, the path (route and name), the parameters.
  const view = renders.viewOf(identity.authorizer);
  const renderKey = `${view}\n${pretty ? 'p' : 'c'}\n${path}\n${read.variant}`;
  const ownIndex = (): number =>
    'key' in target ? store.keyIndex(target.table, target.key) : store.tableIndex(target.table);
  const encode = (): { body: Uint8Array; filtered: boolean } => {
    const { value, filtered } = read.answer();
    return { body: Buffer.from(encodeJson(value, pretty)), filtered };
  };
  return deps.blocking.answer(req, params, {
    target: alsoReads === undefined ? target : eitherOf(store, target, { table: alsoReads }),
    // One index clock: the greater index moves whenever either table does.
    index: () => (alsoReads === undefined ? ownIndex() : Math.max(ownIndex(), store.tableIndex(alsoReads))),
    // Parked reads with one view of the same answer share a group: one render per wake-up.
    shareKey: JSON.stringify([path, read.variant, pretty, consistency, view]),
    render(index) {
      const { body, filtered } = renders.answer(renderKey, index, encode);
      const meta = queryMetaHeaders(brand, index);
      meta.push([brand.effectiveConsistency, consistency]);
      if (filtered) meta.push([brand.resultsFilteredByAcls, 'true']);
      return { status: 200, body, contentType: JSON_TYPE, headers: meta };
    },
  });
}

/** A one-shot watch of two targets: the first change of either wakes it, and both watches end. */
function eitherOf(store: StateStore, a: WatchTarget, b: WatchTarget): WatchSource {
  return (fn) => {
    let done = false;
    const end = (): void => {
      done = true;
      cancelA();
      cancelB();
    };
    // One commit may change both: their deferred callbacks can both run, and fn must run once.
    const once = (): void => {
      if (done) return;
      end();
      fn();
    };
    const cancelA = store.watchOnce(a, once);
    const cancelB = store.watchOnce(b, once);
    return end;
  };
}

/** `?filter=`, compiled once per request over the named fields; undefined without one. */
export function filterOf(
  req: ApiRequest,
  fields: ReadonlySet<string>,
  maps: ReadonlySet<string>,
): Predicate | undefined {
  const text = req.query.get('filter');
  return text ? compileFilter(text, fields, maps) : undefined;
}

/** What `?filter` may name in a NodeService: /v1/catalog/node/:node's Services, node-services' list (as Consul's). */
const NODE_SERVICE_FIELDS: ReadonlySet<string> = new Set([
  'Kind',
  'ID',
  'Service',
  'Tags',
  'Address',
  'TaggedAddresses',
  'Meta',
  'Port',
  'Weights',
  'EnableTagOverride',
  'Proxy',
  'Connect',
  'PeerName',
]);
const NODE_SERVICE_MAPS: ReadonlySet<string> = new Set(['TaggedAddresses', 'Meta', 'Weights', 'Proxy', 'Connect']);

/** `?filter=` over a node's services (Consul filters the values of its Services map); undefined without one. */
export function nodeServiceFilterOf(req: ApiRequest): Predicate | undefined {
  return filterOf(req, NODE_SERVICE_FIELDS, NODE_SERVICE_MAPS);
}

/** `?node-meta=key:value` (repeatable): every pair must be in the node's Meta. */
export function nodeMetaOf(req: ApiRequest): ((meta: Readonly<Record<string, string>>) => boolean) | undefined {
  const pairs = new URLSearchParams(req.head.rawQuery).getAll('node-meta');
  if (pairs.length === 0) return undefined;
  const wanted = pairs.map((pair) => {
    const at = pair.indexOf(':');
    return at === -1 ? ([pair, ''] as const) : ([pair.slice(0, at), pair.slice(at + 1)] as const);
  });
  return (meta) => wanted.every(([k, v]) => meta[k] === v);
}

/** Every value of a repeatable query parameter (`?tag=a&tag=b`). */
export function allOf(req: ApiRequest, name: string): string[] {
  return new URLSearchParams(req.head.rawQuery).getAll(name);
}

/** Keeps the items `identity` may read; says whether any was dropped. */
export function readable<T>(items: readonly T[], allowed: (item: T) => boolean): { kept: T[]; filtered: boolean } {
  const kept = items.filter(allowed);
  return { kept, filtered: kept.length < items.length };
}

export function canReadNode(identity: Identity, node: string): boolean {
  return identity.authorizer.allowed('node', 'read', node);
}

export function canReadService(identity: Identity, service: string): boolean {
  return identity.authorizer.allowed('service', 'read', service);
}

/** The path's name after the route prefix; 400 with Consul's text when it is empty. */
export function pathName(req: ApiRequest, missing: 'service' | 'node'): string {
  if (req.rest === '')
    throw agentError(missing === 'service' ? 'CATALOG_MISSING_SERVICE_PATH' : 'CATALOG_MISSING_NODE_PATH');
  return req.rest;
}

/** The answer's text form for the share key: every parameter that shapes it. */
export function variantOf(req: ApiRequest, names: readonly string[]): string {
  const all = new URLSearchParams(req.head.rawQuery);
  return JSON.stringify(names.map((name) => all.getAll(name)));
}
