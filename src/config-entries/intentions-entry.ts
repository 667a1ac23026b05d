// service-intentions, as Consul 1.17's struct (agent/structs/config_entry_intentions.go): its
// fields, Normalize and Validate (the non-legacy write), and the intentions it stands for. It is
// not stored as an entry: each source is a row of the intentions table (src/connect/intentions/),
// so both APIs read and write the same rows (docs/decisions.md#config-entries).
import type { IntentionPermission } from '../connect/intentions/model.js';
import { intentionPrecedence } from '../connect/intentions/precedence.js';
import { limitIntention, type IntentionCandidate } from '../connect/intentions/validate.js';
import {
  INT,
  pointer,
  sliceOf,
  STRING,
  STRING_MAP,
  STRINGS,
  TIME,
  goQuote,
  type Field,
  type GoStruct,
} from './decode.js';
import {
  HTTP_MATCH_FIELDS,
  HTTP_METHODS,
  KIND_FIELD,
  list,
  META_FIELD,
  metaError,
  NAME_FIELD,
  SERVICE_INTENTIONS,
  str,
  strings,
  sub,
  WILDCARD,
  type KindSpec,
} from './kind.js';

const PERMISSION = pointer([
  { name: 'Action', type: STRING },
  {
    name: 'HTTP',
    type: pointer([...HTTP_MATCH_FIELDS, { name: 'Methods', type: STRINGS, omitEmpty: true }]),
    omitEmpty: true,
  },
]);

/** A source, in Consul's order; Namespace where not `default` (docs/decisions.md D2). */
export const SOURCE_FIELDS: readonly Field[] = [
  { name: 'Name', type: STRING },
  { name: 'Action', type: STRING, omitEmpty: true },
  { name: 'Permissions', type: sliceOf(PERMISSION), omitEmpty: true },
  { name: 'Precedence', type: INT },
  { name: 'LegacyID', alias: 'legacy_id', type: STRING, omitEmpty: true },
  { name: 'Type', type: STRING },
  { name: 'Description', type: STRING, omitEmpty: true },
  { name: 'LegacyMeta', alias: 'legacy_meta', type: STRING_MAP, omitEmpty: true },
  { name: 'LegacyCreateTime', alias: 'legacy_create_time', type: TIME, omitEmpty: true },
  { name: 'LegacyUpdateTime', alias: 'legacy_update_time', type: TIME, omitEmpty: true },
  { name: 'Namespace', type: STRING, omitEmpty: true },
  { name: 'Peer', type: STRING, omitEmpty: true },
  { name: 'SamenessGroup', alias: 'sameness_group', type: STRING, omitEmpty: true },
];

const INTENTIONS_FIELDS: readonly Field[] = [
  KIND_FIELD,
  NAME_FIELD,
  { name: 'Sources', type: sliceOf(pointer(SOURCE_FIELDS)) },
  META_FIELD,
  { name: 'Namespace', type: STRING, omitEmpty: true },
];

const DEFAULT_NAMESPACE = 'default';

/** validateIntentionWildcards, for a name in a namespace. */
function wildcardError(name: string, ns: string, peer: string, samenessGroup: string): string | undefined {
  if (ns !== WILDCARD && ns.includes(WILDCARD))
    return "Namespace: wildcard character '*' cannot be used with partial values";
  if (name !== WILDCARD) {
    if (name.includes(WILDCARD)) return "Name: wildcard character '*' cannot be used with partial values";
    if (ns === WILDCARD) return 'Name: exact value cannot follow wildcard namespace';
  }
  if (peer.includes(WILDCARD)) return "Peer: cannot use wildcard '*' in peer";
  if (samenessGroup.includes(WILDCARD)) return "SamenessGroup: cannot use wildcard '*' in sameness group";
  return undefined;
}

function permissionError(p: GoStruct, i: number, j: number): string | undefined {
  const action = str(p, 'Action');
  if (action !== 'allow' && action !== 'deny')
    return `Sources[${i}].Permissions[${j}].Action must be set to 'allow' or 'deny'`;
  const at = `Sources[${i}].Permissions[${j}].HTTP`;
  const http = sub(p, 'HTTP');
  if (http === undefined) return `${at} is required`;
  let parts = 0;
  for (const k of ['PathExact', 'PathPrefix'] as const) {
    const path = str(http, k);
    if (path === '') continue;
    parts++;
    if (!path.startsWith('/')) return `${at}.${k} doesn't start with '/': ${goQuote(path)}`;
  }
  if (str(http, 'PathRegex') !== '') parts++;
  if (parts > 1) return `${at} should only contain at most one of PathExact, PathPrefix, or PathRegex`;
  const headers = list(http, 'Header');
  for (let k = 0; k < headers.length; k++) {
    const h = headers[k] as GoStruct;
    if (str(h, 'Name') === '') return `${at}.Header[${k}] missing required Name field`;
    const kinds = [h.Present === true, ...['Exact', 'Regex', 'Prefix', 'Suffix'].map((f) => str(h, f) !== '')];
    if (kinds.filter(Boolean).length !== 1)
      return `${at}.Header[${k}] should only contain one of Present, Exact, Prefix, Suffix, or Regex`;
    parts++;
  }
  const methods = strings(http, 'Methods');
  if (methods.length > 0) {
    const seen = new Set<string>();
    for (const m of methods) {
      if (!HTTP_METHODS.has(m)) return `${at}.Methods contains an invalid method ${goQuote(m)}`;
      if (seen.has(m)) return `${at}.Methods contains ${goQuote(m)} more than once`;
      seen.add(m);
    }
    parts++;
  }
  if (parts === 0) return `${at} should not be empty`;
  return undefined;
}

function validateIntentions(e: GoStruct): string | undefined {
  const name = str(e, 'Name');
  const ns = str(e, 'Namespace');
  if (name === '') return 'Name is required';
  const wild = wildcardError(name, ns, '', '');
  if (wild !== undefined) return wild;
  const destIsWild = ns === WILDCARD || name === WILDCARD;
  const meta = metaError(e.Meta as Record<string, string> | undefined);
  if (meta !== undefined) return meta;
  const sources = list(e, 'Sources');
  if (sources.length === 0) return 'At least one source is required';
  const seen = new Set<string>();
  for (let i = 0; i < sources.length; i++) {
    const src = sources[i] as GoStruct;
    const srcName = str(src, 'Name');
    if (srcName === '') return `Sources[${i}].Name is required`;
    const peer = str(src, 'Peer');
    const group = str(src, 'SamenessGroup');
    const srcWild = wildcardError(srcName, str(src, 'Namespace'), peer, group);
    if (srcWild !== undefined) return `Sources[${i}].${srcWild}`;
    // Peering and sameness groups are out of scope (docs/decisions.md D2): no source names one.
    if (peer !== '') return `Sources[${i}].Peer: peering is not supported`;
    if (group !== '') return `Sources[${i}].SamenessGroup: sameness groups are not supported`;
    if (Buffer.byteLength(str(src, 'Description')) > 512) return `Sources[${i}].Description exceeds maximum length 512`;
    const legacyMeta = src.LegacyMeta as Record<string, string> | undefined;
    if (legacyMeta !== undefined && Object.keys(legacyMeta).length > 0)
      return `Sources[${i}].LegacyMeta must be omitted`;
    if (str(src, 'LegacyCreateTime') !== '') return `Sources[${i}].LegacyCreateTime must be omitted`;
    if (str(src, 'LegacyUpdateTime') !== '') return `Sources[${i}].LegacyUpdateTime must be omitted`;
    const permissions = list(src, 'Permissions');
    const action = str(src, 'Action');
    if (permissions.length === 0 && action !== 'allow' && action !== 'deny')
      return `Sources[${i}].Action must be set to 'allow' or 'deny'`;
    if (permissions.length > 0 && action !== '')
      return `Sources[${i}].Action must be omitted if Permissions are specified`;
    if (destIsWild && permissions.length > 0)
      return `Sources[${i}].Permissions cannot be specified on intentions with wildcarded destinations`;
    if (str(src, 'Type') !== 'consul') return `Sources[${i}].Type must be set to 'consul'`;
    for (let j = 0; j < permissions.length; j++) {
      const err = permissionError(permissions[j] as GoStruct, i, j);
      if (err !== undefined) return err;
    }
    const key = `${str(src, 'Namespace')}/${srcName}`;
    if (seen.has(key)) return `Sources[${i}] defines ${goQuote(key)} more than once`;
    seen.add(key);
  }
  return undefined;
}

export const serviceIntentions: KindSpec = {
  kind: SERVICE_INTENTIONS,
  fields: INTENTIONS_FIELDS,
  normalize(e) {
    e.Kind = SERVICE_INTENTIONS;
    const ns = str(e, 'Namespace') || DEFAULT_NAMESPACE;
    e.Namespace = ns;
    const name = str(e, 'Name');
    const sources = list(e, 'Sources');
    for (const src of sources) {
      if (str(src, 'Type') === '') src.Type = 'consul';
      // A source without a namespace is in the destination's, unless that is the wildcard.
      if (str(src, 'Namespace') === '') src.Namespace = ns === WILDCARD ? DEFAULT_NAMESPACE : ns;
      src.Precedence = intentionPrecedence(str(src, 'Namespace'), str(src, 'Name'), ns, name);
      // A write through /v1/config is never a legacy one: those fields are dropped (LegacyMeta is refused).
      src.LegacyID = '';
      src.LegacyCreateTime = '';
      src.LegacyUpdateTime = '';
      for (const p of list(src, 'Permissions')) {
        const http = sub(p, 'HTTP');
        if (http !== undefined && Array.isArray(http.Methods))
          http.Methods = (http.Methods as string[]).map((m) => m.toUpperCase());
      }
    }
    // Closer to the head is tried first: a stable sort by precedence, as Consul's.
    e.Sources = sources
      .map((src, i) => ({ src, i }))
      .sort((a, b) => (b.src.Precedence as number) - (a.src.Precedence as number) || a.i - b.i)
      .map((x) => x.src);
    return undefined;
  },
  validate: validateIntentions,
  canRead: (name) => [{ resource: 'intention', access: 'read', name }],
  canWrite: (e) => [{ resource: 'intention', access: 'write', name: str(e, 'Name') }],
};

/** The intentions a valid entry stands for, in its order; over our size limits: 413. */
export function entryIntentions(e: GoStruct): IntentionCandidate[] {
  const meta = (e.Meta as Record<string, string> | undefined) ?? {};
  return list(e, 'Sources').map((src) => {
    const candidate: IntentionCandidate = {
      Description: str(src, 'Description'),
      SourceNS: str(src, 'Namespace'),
      SourceName: str(src, 'Name'),
      DestinationNS: str(e, 'Namespace'),
      DestinationName: str(e, 'Name'),
      SourcePartition: '',
      DestinationPartition: '',
      SourcePeer: '',
      SourceType: str(src, 'Type'),
      Action: str(src, 'Action'),
      Permissions: list(src, 'Permissions').map(permissionOf),
      Meta: meta,
    };
    limitIntention(candidate);
    return candidate;
  });
}

/** A decoded permission as the intentions table keeps it: only the fields given. */
function permissionOf(p: GoStruct): IntentionPermission {
  const http = sub(p, 'HTTP');
  if (http === undefined) return { Action: str(p, 'Action') };
  const out: Record<string, unknown> = {};
  for (const k of ['PathExact', 'PathPrefix', 'PathRegex']) if (str(http, k) !== '') out[k] = str(http, k);
  const headers = list(http, 'Header');
  if (headers.length > 0)
    out.Header = headers.map((h) => {
      const o: Record<string, unknown> = { Name: str(h, 'Name') };
      if (h.Present === true) o.Present = true;
      for (const k of ['Exact', 'Prefix', 'Suffix', 'Regex']) if (str(h, k) !== '') o[k] = str(h, k);
      if (h.Invert === true) o.Invert = true;
      return o;
    });
  const methods = strings(http, 'Methods');
  if (methods.length > 0) out.Methods = methods;
  return { Action: str(p, 'Action'), HTTP: out };
}
