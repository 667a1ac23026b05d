// /v1/config, as Consul's agent serves it (agent/config_endpoint.go): PUT /v1/config upserts an
// entry (`?cas` answers whether it was written), GET /v1/config/:kind lists a kind (filtered by
// what the token may read), GET /v1/config/:kind/:name reads one, DELETE /v1/config/:kind/:name
// deletes one (`?cas` answers whether it was deleted). Reads block, waking only when their own
// entry or kind changed (docs/decisions.md D6). Thin: decoding, validation, ACL rules and storage
// are src/config-entries/'s (docs/decisions.md#config-entries).
import { requirePermission, type Identity } from '../../acl/identity.js';
import type { GoStruct } from '../../config-entries/decode.js';
import type { ConfigEntries, EntryView } from '../../config-entries/entries.js';
import { SERVICE_INTENTIONS, type KindSpec, type Permission } from '../../config-entries/kind.js';
import { decodeConfigEntry, entryJson, kindSpec, normalizeAndValidate } from '../../config-entries/model.js';
import { agentError } from '../../core/errors.js';
import { parseBlockingParams, queryMetaHeaders, type BlockingLimits, type BlockingQueries } from '../blocking.js';
import type { BrandHeaders } from '../brand.js';
import { requestNamespace } from '../namespace.js';
import { errorTextReply, JSON_TYPE, jsonReply, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { Outcome, Route } from '../routes.js';
import { casParam, configEntryBody } from './config-entries-body.js';

export interface ConfigEntriesDeps {
  readonly entries: ConfigEntries;
  readonly blocking: BlockingQueries;
  readonly brand: BrandHeaders;
  readonly limits: BlockingLimits;
  readonly random: () => number;
}

const DEFAULT_NAMESPACE = 'default';

export function configEntriesRoutes(deps: ConfigEntriesDeps): Route[] {
  const { entries, brand } = deps;

  const bool = (value: boolean, pretty: boolean): Reply => ({
    status: 200,
    body: pretty ? `${value}\n` : String(value),
    contentType: JSON_TYPE,
  });

  const allowed = (identity: Identity, needs: readonly Permission[]): boolean =>
    needs.every((p) => identity.authorizer.allowed(p.resource, p.access, p.name));

  const require = (identity: Identity, needs: readonly Permission[]): void => {
    for (const p of needs) requirePermission(identity, p.resource, p.access, p.name);
  };

  /** The namespace of a service-intentions entry named by the request (?ns, the header, the token's). */
  const namespaceOf = (req: ApiRequest, identity: Identity): string =>
    requestNamespace(req, identity.namespace, DEFAULT_NAMESPACE);

  /** The entry as shown: Namespace only where it is not the default one (docs/decisions.md D2). */
  const render = (v: EntryView): Record<string, unknown> => {
    if (v.spec.kind !== SERVICE_INTENTIONS) return entryJson(v.spec, v.entry, v.createIndex, v.modifyIndex);
    const shown: GoStruct = { ...v.entry, Namespace: shownNamespace(v.entry.Namespace) };
    shown.Sources = ((v.entry.Sources as GoStruct[] | undefined) ?? []).map((s) => ({
      ...s,
      Namespace: shownNamespace(s.Namespace),
    }));
    return entryJson(v.spec, shown, v.createIndex, v.modifyIndex);
  };

  // ---- PUT /v1/config ----

  const apply = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    const raw = configEntryBody(req.body);
    const { spec, entry } = decodeConfigEntry(raw);
    if (spec.kind === SERVICE_INTENTIONS && (entry.Namespace as string) === '')
      entry.Namespace = namespaceOf(req, identity);
    const cas = casParam(req.query.get('cas'));
    normalizeAndValidate(spec, entry);
    require(identity, spec.canWrite(entry));
    return bool(await entries.apply(spec, entry, cas), req.pretty);
  };

  // ---- GET /v1/config/:kind[/:name] ----

  const read = (req: ApiRequest, identity: Identity): Outcome => {
    const [kind, name] = splitPath(req.rest);
    const spec = kindSpec(kind);
    const namespace = namespaceOf(req, identity);
    return name === undefined ? list(req, identity, spec) : one(req, identity, spec, name, namespace);
  };

  const one = (req: ApiRequest, identity: Identity, spec: KindSpec, name: string, namespace: string): Outcome => {
    require(identity, spec.canRead(name));
    const watch = entries.entryWatch(spec.kind, name, namespace);
    const params = parseBlockingParams(req.query, deps.limits, deps.random);
    const pretty = req.pretty;
    return deps.blocking.answer(req, params, {
      target: watch.target,
      index: watch.index,
      render(index) {
        const meta = queryMetaHeaders(brand, index);
        const found = entries.get(spec.kind, name, namespace);
        if (found === undefined)
          return errorTextReply(agentError('CONFIG_ENTRY_NOT_FOUND', { kind: spec.kind, name }), meta);
        return jsonReply(render(found), pretty, meta);
      },
    });
  };

  const list = (req: ApiRequest, identity: Identity, spec: KindSpec): Outcome => {
    const watch = entries.listWatch(spec.kind);
    const params = parseBlockingParams(req.query, deps.limits, deps.random);
    const pretty = req.pretty;
    return deps.blocking.answer(req, params, {
      target: watch.target,
      index: watch.index,
      render(index) {
        const all = entries.list(spec.kind);
        const shown = all.filter((v) => allowed(identity, spec.canRead(v.entry.Name as string)));
        const meta = queryMetaHeaders(brand, index);
        if (shown.length < all.length) meta.push([brand.resultsFilteredByAcls, 'true']);
        return jsonReply(shown.map(render), pretty, meta);
      },
    });
  };

  // ---- DELETE /v1/config/:kind/:name ----

  const remove = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    const [kind, name] = splitPath(req.rest);
    if (name === undefined) throw agentError('CONFIG_ENTRY_DELETE_PATH');
    const spec = kindSpec(kind);
    const namespace = namespaceOf(req, identity);
    const cas = casParam(req.query.get('cas'));
    // Consul's Delete normalizes the entry it made from the path (proxy-defaults checks the name) before its ACL check.
    const entry: GoStruct = { Kind: kind, Name: name, Namespace: namespace };
    const problem = spec.normalize(entry);
    if (problem !== undefined) throw agentError('CONFIG_ENTRY_INVALID', { problems: problem });
    require(identity, spec.canWrite(entry));
    const deleted = await entries.delete(spec.kind, entry.Name as string, namespace, cas);
    if (cas !== undefined) return bool(deleted, req.pretty);
    return jsonReply({}, req.pretty);
  };

  return [
    { path: '/v1/config', methods: { PUT: { acl: 'resolved', handler: apply } } },
    {
      path: '/v1/config/',
      prefix: true,
      methods: { GET: { acl: 'resolved', handler: read }, DELETE: { acl: 'resolved', handler: remove } },
    },
  ];
}

/** `kind` or `kind/name` (the name may hold further slashes, as Consul's SplitN(…, 2)). */
function splitPath(rest: string): [string, string | undefined] {
  const slash = rest.indexOf('/');
  return slash === -1 ? [rest, undefined] : [rest.slice(0, slash), rest.slice(slash + 1)];
}

function shownNamespace(ns: unknown): string {
  return ns === DEFAULT_NAMESPACE ? '' : ((ns as string | undefined) ?? '');
}
