// The discovery chain's kinds, as Consul 1.17's structs (agent/structs/config_entry_discoverychain.go):
// service-resolver, service-splitter and service-router, stored and validated; no proxy here
// routes by them. Writing one needs service:write on its name and service:read on every other
// service it names (canWriteDiscoveryChain).
import { compileFilter } from '../core/bexpr.js';
import { formatDuration } from '../core/duration.js';
import {
  BOOL,
  DURATION,
  FLOAT32,
  pointer,
  sliceOf,
  STRING,
  STRING_MAP,
  STRINGS,
  struct,
  UINT,
  goQuote,
  type Field,
  type FieldType,
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
  SERVICE_RESOLVER,
  SERVICE_ROUTER,
  SERVICE_SPLITTER,
  str,
  strings,
  sub,
  type KindSpec,
  type Permission,
} from './kind.js';

const HEADER_MODIFIERS: FieldType = pointer([
  { name: 'Add', type: STRING_MAP, omitEmpty: true },
  { name: 'Set', type: STRING_MAP, omitEmpty: true },
  { name: 'Remove', type: STRINGS, omitEmpty: true },
]);

// ---- service-resolver ----

const FAILOVER_TARGET = struct([
  { name: 'Service', type: STRING, omitEmpty: true },
  { name: 'ServiceSubset', alias: 'service_subset', type: STRING, omitEmpty: true },
  { name: 'Partition', type: STRING, omitEmpty: true },
  { name: 'Namespace', type: STRING, omitEmpty: true },
  { name: 'Datacenter', type: STRING, omitEmpty: true },
  { name: 'Peer', type: STRING, omitEmpty: true },
]);

// ConnectTimeout and RequestTimeout come first: Consul's MarshalJSON writes them ahead of the rest.
const RESOLVER_FIELDS: readonly Field[] = [
  { name: 'ConnectTimeout', alias: 'connect_timeout', type: DURATION, omitEmpty: true },
  { name: 'RequestTimeout', alias: 'request_timeout', type: DURATION, omitEmpty: true },
  KIND_FIELD,
  NAME_FIELD,
  { name: 'DefaultSubset', alias: 'default_subset', type: STRING, omitEmpty: true },
  {
    name: 'Subsets',
    type: {
      t: 'map',
      of: struct([
        { name: 'Filter', type: STRING, omitEmpty: true },
        { name: 'OnlyPassing', alias: 'only_passing', type: BOOL, omitEmpty: true },
      ]),
    },
    omitEmpty: true,
  },
  {
    name: 'Redirect',
    type: pointer([
      { name: 'Service', type: STRING, omitEmpty: true },
      { name: 'ServiceSubset', alias: 'service_subset', type: STRING, omitEmpty: true },
      { name: 'Namespace', type: STRING, omitEmpty: true },
      { name: 'Partition', type: STRING, omitEmpty: true },
      { name: 'SamenessGroup', alias: 'sameness_group', type: STRING, omitEmpty: true },
      { name: 'Datacenter', type: STRING, omitEmpty: true },
      { name: 'Peer', type: STRING, omitEmpty: true },
    ]),
    omitEmpty: true,
  },
  {
    name: 'Failover',
    type: {
      t: 'map',
      of: struct([
        { name: 'Service', type: STRING, omitEmpty: true },
        { name: 'ServiceSubset', alias: 'service_subset', type: STRING, omitEmpty: true },
        { name: 'Namespace', type: STRING, omitEmpty: true },
        { name: 'SamenessGroup', alias: 'sameness_group', type: STRING, omitEmpty: true },
        { name: 'Datacenters', type: STRINGS, omitEmpty: true },
        { name: 'Targets', type: sliceOf(FAILOVER_TARGET), omitEmpty: true },
        { name: 'Policy', type: pointer([{ name: 'Mode', type: STRING, omitEmpty: true }]), omitEmpty: true },
      ]),
    },
    omitEmpty: true,
  },
  {
    name: 'PrioritizeByLocality',
    alias: 'prioritize_by_locality',
    type: pointer([{ name: 'Mode', type: STRING, omitEmpty: true }]),
    omitEmpty: true,
  },
  {
    name: 'LoadBalancer',
    alias: 'load_balancer',
    type: pointer([
      { name: 'Policy', type: STRING, omitEmpty: true },
      {
        name: 'RingHashConfig',
        alias: 'ring_hash_config',
        type: pointer([
          { name: 'MinimumRingSize', alias: 'minimum_ring_size', type: UINT, omitEmpty: true },
          { name: 'MaximumRingSize', alias: 'maximum_ring_size', type: UINT, omitEmpty: true },
        ]),
        omitEmpty: true,
      },
      {
        name: 'LeastRequestConfig',
        alias: 'least_request_config',
        type: pointer([{ name: 'ChoiceCount', alias: 'choice_count', type: UINT, omitEmpty: true }]),
        omitEmpty: true,
      },
      {
        name: 'HashPolicies',
        alias: 'hash_policies',
        type: sliceOf(
          struct([
            { name: 'Field', type: STRING, omitEmpty: true },
            { name: 'FieldValue', alias: 'field_value', type: STRING, omitEmpty: true },
            {
              name: 'CookieConfig',
              alias: 'cookie_config',
              type: pointer([
                { name: 'Session', type: BOOL, omitEmpty: true },
                { name: 'TTL', type: DURATION, omitEmpty: true },
                { name: 'Path', type: STRING, omitEmpty: true },
              ]),
              omitEmpty: true,
            },
            { name: 'SourceIP', alias: 'source_ip', type: BOOL, omitEmpty: true },
            { name: 'Terminal', type: BOOL, omitEmpty: true },
          ]),
        ),
        omitEmpty: true,
      },
    ]),
    omitEmpty: true,
  },
  META_FIELD,
];

const VALID_SUBSET = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const LB_POLICIES = new Set(['', 'random', 'round_robin', 'least_request', 'ring_hash', 'maglev']);
const HASH_FIELDS = new Set(['header', 'cookie', 'query_parameter']);

function subsetError(name: string): string | undefined {
  if (name === '' || name.length > 63) return 'must be non-empty and 63 characters or fewer';
  if (!VALID_SUBSET.test(name))
    return "must be 63 characters or fewer, begin or end with lower case alphanumeric characters, and contain lower case alphanumeric characters or '-' in between";
  return undefined;
}

function validateResolver(e: GoStruct): string | undefined {
  const name = str(e, 'Name');
  if (name === '') return 'Name is required';
  const meta = metaError(e.Meta as Record<string, string> | undefined);
  if (meta !== undefined) return meta;
  const subsets = (e.Subsets as Record<string, GoStruct> | undefined) ?? {};
  // Go ranges over a map in random order: the names are taken sorted here, so one entry always gets one answer.
  for (const subset of Object.keys(subsets).sort()) {
    if (subset === '') return 'Subset defined with empty name';
    const err = subsetError(subset);
    if (err !== undefined) return `Subset ${goQuote(subset)} is invalid: ${err}`;
    const filter = str(subsets[subset] as GoStruct, 'Filter');
    if (filter !== '') {
      try {
        compileFilter(filter, EVERY_SELECTOR);
      } catch (err) {
        return `Filter for subset ${goQuote(subset)} is not a valid expression: ${filterText(err)}`;
      }
    }
  }
  const isSubset = (s: string): boolean => Object.hasOwn(subsets, s);
  const defaultSubset = str(e, 'DefaultSubset');
  if (defaultSubset !== '' && !isSubset(defaultSubset))
    return `DefaultSubset ${goQuote(defaultSubset)} is not a valid subset`;

  const failover = (e.Failover as Record<string, GoStruct> | undefined) ?? {};
  const r = sub(e, 'Redirect');
  if (r !== undefined) {
    if (str(r, 'Partition') !== '' && str(r, 'Partition') !== 'default' && str(r, 'Datacenter') !== '')
      return 'Cross-datacenter and cross-partition redirect is not supported';
    if (Object.keys(failover).length > 0) return 'Redirect and Failover cannot both be set';
    const fields = ['Service', 'ServiceSubset', 'Namespace', 'Partition', 'SamenessGroup', 'Datacenter', 'Peer'];
    if (fields.every((f) => str(r, f) === '')) return 'Redirect is empty';
    const [service, subset, peer] = [str(r, 'Service'), str(r, 'ServiceSubset'), str(r, 'Peer')];
    if (peer !== '' && subset !== '') return 'Redirect.Peer cannot be set with Redirect.ServiceSubset';
    if (peer !== '' && str(r, 'Partition') !== '') return 'Redirect.Partition cannot be set with Redirect.Peer';
    if (peer !== '' && str(r, 'Datacenter') !== '') return 'Redirect.Peer cannot be set with Redirect.Datacenter';
    if (service === '') {
      for (const f of ['ServiceSubset', 'Namespace', 'Partition', 'Peer'])
        if (str(r, f) !== '') return `Redirect.${f} defined without Redirect.Service`;
    } else if (subset !== '' && service === name && !isSubset(subset)) {
      return `Redirect.ServiceSubset ${goQuote(subset)} is not a valid subset of ${goQuote(name)}`;
    }
  }
  for (const subset of Object.keys(failover).sort()) {
    const f = failover[subset] as GoStruct;
    const prefix = `Bad Failover[${goQuote(subset)}]: `;
    if (subset !== '*' && !isSubset(subset)) return `${prefix}not a valid subset subset`;
    const targets = list(f, 'Targets');
    const datacenters = strings(f, 'Datacenters');
    const empty =
      str(f, 'Service') === '' &&
      str(f, 'ServiceSubset') === '' &&
      str(f, 'Namespace') === '' &&
      str(f, 'SamenessGroup') === '' &&
      datacenters.length === 0 &&
      targets.length === 0;
    if (empty)
      return `${prefix}one of Service, ServiceSubset, Namespace, Targets, SamenessGroup, or Datacenters is required`;
    const mode = str(sub(f, 'Policy') ?? {}, 'Mode');
    if (!['', 'default', 'order-by-locality'].includes(mode))
      return `${prefix}Policy must be one of '', 'default', or 'order-by-locality'`;
    const [service, subsetName] = [str(f, 'Service'), str(f, 'ServiceSubset')];
    if (subsetName !== '' && (service === '' || service === name) && !isSubset(subsetName))
      return `${prefix}ServiceSubset ${goQuote(subsetName)} is not a valid subset of ${goQuote(service)}`;
    if (datacenters.length > 0 && targets.length > 0) return `${prefix}Targets cannot be set with Datacenters`;
    if (subsetName !== '' && targets.length > 0) return `${prefix}Targets cannot be set with ServiceSubset`;
    if (service !== '' && targets.length > 0) return `${prefix}Targets cannot be set with Service`;
    for (let i = 0; i < targets.length; i++) {
      const t = targets[i] as GoStruct;
      const at = `Bad Failover[${goQuote(subset)}].Targets[${i}]: `;
      const [tPeer, tSubset, tPartition, tDc] = [
        str(t, 'Peer'),
        str(t, 'ServiceSubset'),
        str(t, 'Partition'),
        str(t, 'Datacenter'),
      ];
      if (tPeer !== '' && tSubset !== '') return `${at}Peer cannot be set with ServiceSubset`;
      if (tPeer !== '' && tPartition !== '') return `${at}Partition cannot be set with Peer`;
      if (tPeer !== '' && tDc !== '') return `${at}Peer cannot be set with Datacenter`;
      if (tPartition !== '' && tDc !== '') return `${at}Partition cannot be set with Datacenter`;
      if (tSubset !== '' && (str(t, 'Service') === '' || str(t, 'Service') === name) && !isSubset(tSubset))
        return `${at}ServiceSubset ${goQuote(tSubset)} is not a valid subset of ${goQuote(name)}`;
    }
    if (datacenters.includes('')) return `Bad Failover[${goQuote(subset)}].Datacenters: found empty datacenter`;
  }
  if ((e.ConnectTimeout as number) < 0) return `Bad ConnectTimeout '${goDuration(e.ConnectTimeout)}', must be >= 0`;
  if ((e.RequestTimeout as number) < 0) return `Bad RequestTimeout '${goDuration(e.RequestTimeout)}', must be >= 0`;
  const lb = sub(e, 'LoadBalancer');
  if (lb !== undefined) {
    const policy = str(lb, 'Policy');
    if (!LB_POLICIES.has(policy)) return `Bad LoadBalancer policy: ${goQuote(policy)} is not supported`;
    if (policy !== 'ring_hash' && sub(lb, 'RingHashConfig') !== undefined)
      return `Bad LoadBalancer configuration. RingHashConfig specified for incompatible load balancing policy ${goQuote(policy)}`;
    if (policy !== 'least_request' && sub(lb, 'LeastRequestConfig') !== undefined)
      return `Bad LoadBalancer configuration. LeastRequestConfig specified for incompatible load balancing policy ${goQuote(policy)}`;
    const hashed = policy === 'ring_hash' || policy === 'maglev';
    const policies = list(lb, 'HashPolicies');
    if (!hashed && policies.length > 0)
      return `Bad LoadBalancer configuration: HashPolicies specified for non-hash-based Policy: ${goQuote(policy)}`;
    for (let i = 0; i < policies.length; i++) {
      const hp = policies[i] as GoStruct;
      const [field, value, sourceIp] = [str(hp, 'Field'), str(hp, 'FieldValue'), hp.SourceIP === true];
      const at = `Bad LoadBalancer HashPolicy[${i}]: `;
      if (field !== '' && !HASH_FIELDS.has(field)) return `${at}${goQuote(field)} is not a supported field`;
      if (sourceIp && field !== '')
        return `${at}A single hash policy cannot hash both a source address and a ${goQuote(field)}`;
      if (sourceIp && value !== '') return `${at}A FieldValue cannot be specified when hashing SourceIP`;
      if (field !== '' && value === '') return `${at}Field ${goQuote(field)} was specified without a FieldValue`;
      if (value !== '' && field === '') return `${at}FieldValue requires a Field to apply to`;
      const cookie = sub(hp, 'CookieConfig');
      if (cookie !== undefined) {
        if (field !== 'cookie') return `${at}cookie_config provided for ${goQuote(field)}`;
        if (cookie.Session === true && (cookie.TTL as number) !== 0)
          return `${at}a session cookie cannot have an associated TTL`;
      }
    }
  }
  return undefined;
}

function goDuration(ms: unknown): string {
  return formatDuration(ms as number);
}

/** bexpr.CreateEvaluator(filter, nil) checks syntax only: every selector is taken. */
const EVERY_SELECTOR: ReadonlySet<string> = new (class extends Set<string> {
  override has(): boolean {
    return true;
  }
})();

/** The parser's own words, without the prefix the filter endpoints give them. */
function filterText(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/^Failed to create boolean expression evaluator: /, '');
}

/** The services a resolver names besides itself: its redirect's, its failovers' and their targets'. */
function resolverRelated(e: GoStruct): string[] {
  const name = str(e, 'Name');
  const out = new Set<string>();
  const r = sub(e, 'Redirect');
  if (r !== undefined) out.add(str(r, 'Service') || name);
  for (const f of Object.values((e.Failover as Record<string, GoStruct> | undefined) ?? {})) {
    const targets = list(f, 'Targets');
    if (targets.length === 0) out.add(str(f, 'Service') || name);
    for (const t of targets) if (str(t, 'Peer') === '') out.add(str(t, 'Service') || name);
  }
  out.delete(name);
  return [...out].sort();
}

function chainPermissions(e: GoStruct, related: readonly string[]): Permission[] {
  return [
    { resource: 'service', access: 'write', name: str(e, 'Name') },
    ...related.map((name) => ({ resource: 'service' as const, access: 'read' as const, name })),
  ];
}

export const serviceResolver: KindSpec = {
  kind: SERVICE_RESOLVER,
  fields: RESOLVER_FIELDS,
  normalize(e) {
    e.Kind = SERVICE_RESOLVER;
    return undefined;
  },
  validate: validateResolver,
  canRead: (name) => [{ resource: 'service', access: 'read', name }],
  canWrite: (e) => chainPermissions(e, resolverRelated(e)),
};

// ---- service-splitter ----

const SPLITTER_FIELDS: readonly Field[] = [
  KIND_FIELD,
  NAME_FIELD,
  {
    name: 'Splits',
    type: sliceOf(
      struct([
        { name: 'Weight', type: FLOAT32 },
        { name: 'Service', type: STRING, omitEmpty: true },
        { name: 'ServiceSubset', alias: 'service_subset', type: STRING, omitEmpty: true },
        { name: 'Namespace', type: STRING, omitEmpty: true },
        { name: 'Partition', type: STRING, omitEmpty: true },
        { name: 'RequestHeaders', alias: 'request_headers', type: HEADER_MODIFIERS, omitEmpty: true },
        { name: 'ResponseHeaders', alias: 'response_headers', type: HEADER_MODIFIERS, omitEmpty: true },
      ]),
    ),
  },
  META_FIELD,
];

/** Weights in units of 0.01%, as Consul's scaleWeight rounds a float32. */
function scaleWeight(weight: number): number {
  return Math.round(Math.fround(weight * 100));
}

/** Go's %f of a float32 sum of weights. */
function goFloat(n: number): string {
  return n.toFixed(6);
}

export const serviceSplitter: KindSpec = {
  kind: SERVICE_SPLITTER,
  fields: SPLITTER_FIELDS,
  normalize(e) {
    e.Kind = SERVICE_SPLITTER;
    for (const split of list(e, 'Splits')) {
      if (str(split, 'Namespace') === '') split.Namespace = '';
      split.Weight = scaleWeight(split.Weight as number) / 100;
    }
    return undefined;
  },
  validate(e) {
    const name = str(e, 'Name');
    if (name === '') return 'Name is required';
    const splits = list(e, 'Splits');
    if (splits.length === 0) return 'no splits configured';
    const meta = metaError(e.Meta as Record<string, string> | undefined);
    if (meta !== undefined) return meta;
    const found = new Set<string>();
    for (const s of splits) {
      const service = str(s, 'Service') || name;
      const key = JSON.stringify([service, str(s, 'ServiceSubset'), str(s, 'Namespace'), str(s, 'Partition')]);
      if (found.has(key))
        return `split destination occurs more than once: service=${goQuote(service)}, subset=${goQuote(str(s, 'ServiceSubset'))}, namespace=${goQuote(str(s, 'Namespace'))}, partition=${goQuote(str(s, 'Partition'))}`;
      found.add(key);
    }
    const sum = splits.reduce((total, s) => total + scaleWeight(s.Weight as number), 0);
    if (sum !== 10_000) return `the sum of all split weights must be 100, not ${goFloat(Math.fround(sum / 100))}`;
    return undefined;
  },
  canRead: (name) => [{ resource: 'service', access: 'read', name }],
  canWrite: (e) => {
    const name = str(e, 'Name');
    const related = new Set(list(e, 'Splits').map((s) => str(s, 'Service') || name));
    related.delete(name);
    return chainPermissions(e, [...related].sort());
  },
};

// ---- service-router ----

// RequestTimeout and IdleTimeout come first: Consul's MarshalJSON writes them ahead of the rest.
const ROUTE_DESTINATION: readonly Field[] = [
  { name: 'RequestTimeout', alias: 'request_timeout', type: DURATION, omitEmpty: true },
  { name: 'IdleTimeout', alias: 'idle_timeout', type: DURATION, omitEmpty: true },
  { name: 'Service', type: STRING, omitEmpty: true },
  { name: 'ServiceSubset', alias: 'service_subset', type: STRING, omitEmpty: true },
  { name: 'Namespace', type: STRING, omitEmpty: true },
  { name: 'Partition', type: STRING, omitEmpty: true },
  { name: 'PrefixRewrite', alias: 'prefix_rewrite', type: STRING, omitEmpty: true },
  { name: 'NumRetries', alias: 'num_retries', type: UINT, omitEmpty: true },
  { name: 'RetryOnConnectFailure', alias: 'retry_on_connect_failure', type: BOOL, omitEmpty: true },
  { name: 'RetryOn', alias: 'retry_on', type: STRINGS, omitEmpty: true },
  { name: 'RetryOnStatusCodes', alias: 'retry_on_status_codes', type: sliceOf(UINT), omitEmpty: true },
  { name: 'RequestHeaders', alias: 'request_headers', type: HEADER_MODIFIERS, omitEmpty: true },
  { name: 'ResponseHeaders', alias: 'response_headers', type: HEADER_MODIFIERS, omitEmpty: true },
];

const ROUTER_FIELDS: readonly Field[] = [
  KIND_FIELD,
  NAME_FIELD,
  {
    name: 'Routes',
    type: sliceOf(
      struct([
        {
          name: 'Match',
          type: pointer([
            {
              name: 'HTTP',
              type: pointer([
                ...HTTP_MATCH_FIELDS,
                {
                  name: 'QueryParam',
                  alias: 'query_param',
                  type: sliceOf(
                    struct([
                      { name: 'Name', type: STRING },
                      { name: 'Present', type: BOOL, omitEmpty: true },
                      { name: 'Exact', type: STRING, omitEmpty: true },
                      { name: 'Regex', type: STRING, omitEmpty: true },
                    ]),
                  ),
                  omitEmpty: true,
                },
                { name: 'Methods', type: STRINGS, omitEmpty: true },
              ]),
              omitEmpty: true,
            },
          ]),
          omitEmpty: true,
        },
        { name: 'Destination', type: pointer(ROUTE_DESTINATION), omitEmpty: true },
      ]),
    ),
  },
  META_FIELD,
];

const RETRY_CONDITIONS = new Set([
  '5xx',
  'gateway-error',
  'reset',
  'connect-failure',
  'envoy-ratelimited',
  'retriable-4xx',
  'refused-stream',
  'cancelled',
  'deadline-exceeded',
  'internal',
  'resource-exhausted',
  'unavailable',
]);

function validateRoute(route: GoStruct, i: number): string | undefined {
  let prefixRewritable = false;
  const http = sub(sub(route, 'Match') ?? {}, 'HTTP');
  if (http !== undefined) {
    let parts = 0;
    const exact = str(http, 'PathExact');
    const prefix = str(http, 'PathPrefix');
    if (exact !== '') {
      prefixRewritable = true;
      parts++;
      if (!exact.startsWith('/')) return `Route[${i}] PathExact doesn't start with '/': ${goQuote(exact)}`;
    }
    if (prefix !== '') {
      prefixRewritable = true;
      parts++;
      if (!prefix.startsWith('/')) return `Route[${i}] PathPrefix doesn't start with '/': ${goQuote(prefix)}`;
    }
    if (str(http, 'PathRegex') !== '') parts++;
    if (parts > 1) return `Route[${i}] should only contain at most one of PathExact, PathPrefix, or PathRegex`;
    const headers = list(http, 'Header');
    for (let j = 0; j < headers.length; j++) {
      const h = headers[j] as GoStruct;
      if (str(h, 'Name') === '') return `Route[${i}] Header[${j}] missing required Name field`;
      const kinds = [h.Present === true, ...['Exact', 'Regex', 'Prefix', 'Suffix'].map((k) => str(h, k) !== '')];
      if (kinds.filter(Boolean).length !== 1)
        return `Route[${i}] Header[${j}] should only contain one of Present, Exact, Prefix, Suffix, or Regex`;
    }
    const params = list(http, 'QueryParam');
    for (let j = 0; j < params.length; j++) {
      const q = params[j] as GoStruct;
      if (str(q, 'Name') === '') return `Route[${i}] QueryParam[${j}] missing required Name field`;
      const kinds = [q.Present === true, str(q, 'Exact') !== '', str(q, 'Regex') !== ''];
      if (kinds.filter(Boolean).length !== 1)
        return `Route[${i}] QueryParam[${j}] should only contain one of Present, Exact, or Regex`;
    }
    const seen = new Set<string>();
    for (const m of strings(http, 'Methods')) {
      if (!HTTP_METHODS.has(m)) return `Route[${i}] Methods contains an invalid method ${goQuote(m)}`;
      if (seen.has(m)) return `Route[${i}] Methods contains ${goQuote(m)} more than once`;
      seen.add(m);
    }
  }
  const destination = sub(route, 'Destination');
  if (destination !== undefined) {
    if (str(destination, 'PrefixRewrite') !== '' && !prefixRewritable)
      return `Route[${i}] cannot make use of PrefixRewrite without configuring either PathExact or PathPrefix`;
    for (const r of strings(destination, 'RetryOn'))
      if (!RETRY_CONDITIONS.has(r)) return `Route[${i}] contains an invalid retry condition: ${goQuote(r)}`;
  }
  return undefined;
}

export const serviceRouter: KindSpec = {
  kind: SERVICE_ROUTER,
  fields: ROUTER_FIELDS,
  normalize(e) {
    e.Kind = SERVICE_ROUTER;
    for (const route of list(e, 'Routes')) {
      const http = sub(sub(route, 'Match') ?? {}, 'HTTP');
      if (http !== undefined && Array.isArray(http.Methods))
        http.Methods = (http.Methods as string[]).map((m) => m.toUpperCase());
    }
    return undefined;
  },
  validate(e) {
    if (str(e, 'Name') === '') return 'Name is required';
    const meta = metaError(e.Meta as Record<string, string> | undefined);
    if (meta !== undefined) return meta;
    const routes = list(e, 'Routes');
    for (let i = 0; i < routes.length; i++) {
      const err = validateRoute(routes[i] as GoStruct, i);
      if (err !== undefined) return err;
    }
    return undefined;
  },
  canRead: (name) => [{ resource: 'service', access: 'read', name }],
  canWrite: (e) => {
    const name = str(e, 'Name');
    const related = new Set<string>();
    for (const route of list(e, 'Routes')) {
      const destination = sub(route, 'Destination');
      if (destination !== undefined) related.add(str(destination, 'Service') || name);
    }
    related.delete(name);
    return chainPermissions(e, [...related].sort());
  },
};
