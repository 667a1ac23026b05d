// Validation of raw config against the schema: each key's value, then the rules that span keys
// (unknown keys are known-keys.ts's). Pure (no I/O); every problem is collected as "<key>: <what is wrong>".
import { formatDuration } from '../core/duration.js';
import { caConfigProblems, defaultKeyBits } from './ca-rules.js';
import { show } from './fields.js';
import { isPlainObject, type PlainObject } from './object.js';
import { CONFIG_SCHEMA, ConfigKey, type ConfigTree, type ConfigValues, type DefaultContext } from './schema.js';

export interface ValidationContext extends DefaultContext {
  /** -dev: state lives in memory, so data_dir may be absent. */
  readonly dev: boolean;
}

export type ValidationResult =
  { readonly ok: true; readonly values: ConfigValues } | { readonly ok: false; readonly problems: readonly string[] };

/**
 * Validates the merged raw config: fills defaults, converts every key through its schema, then
 * checks the rules between keys. Unknown keys are ignored here (see known-keys.ts).
 */
export function validateValues(merged: PlainObject, ctx: ValidationContext): ValidationResult {
  const problems: string[] = [];
  const failed = new Set<string>();
  const values = walk(CONFIG_SCHEMA, merged, '', ctx, problems, failed);
  // Consul refuses to start a non-dev agent without a place to persist state.
  if (!ctx.dev && values['data_dir'] === undefined && !failed.has('data_dir')) {
    problems.push('data_dir: required unless -dev is given');
  }
  // Cross-key rules only compare keys that parsed; a broken key has already been reported.
  problems.push(...crossKeyProblems(values as unknown as ConfigValues, failed));
  return problems.length === 0 ? { ok: true, values: values as unknown as ConfigValues } : { ok: false, problems };
}

function walk(
  tree: ConfigTree,
  raw: PlainObject,
  prefix: string,
  ctx: DefaultContext,
  problems: string[],
  failed: Set<string>,
): PlainObject {
  const out: PlainObject = {};
  for (const [name, node] of Object.entries(tree)) {
    const path = prefix + name;
    const value = Object.hasOwn(raw, name) ? raw[name] : undefined;
    if (node instanceof ConfigKey) {
      out[name] = parseKey(node, value, path, ctx, problems, failed);
      continue;
    }
    if (value !== undefined && !isPlainObject(value)) {
      problems.push(`${path}: expected an object, got ${show(value)}`);
      failed.add(path);
    }
    out[name] = walk(node, isPlainObject(value) ? value : {}, `${path}.`, ctx, problems, failed);
  }
  return out;
}

function parseKey(
  key: ConfigKey<unknown, unknown, boolean>,
  value: unknown,
  path: string,
  ctx: DefaultContext,
  problems: string[],
  failed: Set<string>,
): unknown {
  const fallback = key.defaultValue;
  const given =
    value !== undefined
      ? value
      : typeof fallback === 'function'
        ? (fallback as (c: DefaultContext) => unknown)(ctx)
        : fallback;
  if (given === undefined) return undefined;
  const result = key.schema.safeParse(given);
  if (result.success) return result.data;
  // One message per key: a second issue on the same value only restates the first.
  problems.push(`${path}: ${result.error.issues[0]?.message ?? 'invalid value'}`);
  failed.add(path);
  return undefined;
}

/** The CA defaults, validated once; they stand in for CA keys that failed to parse. */
const DEFAULT_CA = walk(
  CONFIG_SCHEMA.connect.ca_config,
  {},
  '',
  { hostname: '' },
  [],
  new Set(),
) as unknown as ConfigValues['connect']['ca_config'];

/** `v` is typed as complete, but keys listed in `failed` are undefined in it. */
function crossKeyProblems(v: ConfigValues, failed: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  // A group that was not an object is reported once; its keys then hold defaults, which agree.
  const ok = (...paths: string[]): boolean => paths.every((p) => !failed.has(p));

  if (ok('default_query_time', 'max_query_time') && v.max_query_time < v.default_query_time) {
    const [floor, given] = [formatDuration(v.default_query_time), formatDuration(v.max_query_time)];
    problems.push(`max_query_time: must be at least default_query_time (${floor}), got ${given}`);
  }
  const [minTtl, maxTtl] = ['acl.token_min_expiration_ttl', 'acl.token_max_expiration_ttl'];
  if (ok(minTtl, maxTtl) && v.acl.token_max_expiration_ttl < v.acl.token_min_expiration_ttl) {
    const [floor, given] = [
      formatDuration(v.acl.token_min_expiration_ttl),
      formatDuration(v.acl.token_max_expiration_ttl),
    ];
    problems.push(`${maxTtl}: must be at least ${minTtl} (${floor}), got ${given}`);
  }
  const body = 'limits.http_max_body_bytes';
  const kv = 'limits.kv_max_value_size';
  if (ok(body, kv) && v.limits.http_max_body_bytes < v.limits.kv_max_value_size) {
    const { http_max_body_bytes: given, kv_max_value_size: floor } = v.limits;
    problems.push(`${body}: must be at least ${kv} (${floor}), got ${given}`);
  }

  problems.push(...clusterProblems(v, ok));
  problems.push(...listenerProblems(v, ok));

  // Keys that failed are undefined here; stand in their defaults so the other rules still run,
  // then drop any finding that read a failed key (it would be about a value nobody wrote).
  const ca = v.connect.ca_config;
  const caPrefix = 'connect.ca_config.';
  const found = caConfigProblems({
    leafCertTtlMs: ca.leaf_cert_ttl ?? DEFAULT_CA.leaf_cert_ttl,
    intermediateCertTtlMs: ca.intermediate_cert_ttl ?? DEFAULT_CA.intermediate_cert_ttl,
    rootCertTtlMs: ca.root_cert_ttl ?? DEFAULT_CA.root_cert_ttl,
    privateKeyType: ca.private_key_type ?? DEFAULT_CA.private_key_type,
    privateKeyBits: ca.private_key_bits ?? defaultKeyBits(ca.private_key_type ?? DEFAULT_CA.private_key_type),
    privateKey: ca.private_key,
    rootCert: ca.root_cert,
  });
  for (const p of found) {
    if (ok(...p.involves.map((field) => caPrefix + field))) problems.push(`${caPrefix}${p.field}: ${p.message}`);
  }
  return problems;
}

/** Settings that only make sense in pairs, or only with etcd endpoints. */
function clusterProblems(v: ConfigValues, ok: (...paths: string[]) => boolean): string[] {
  const problems: string[] = [];
  const etcd = v.cluster.etcd;
  const pairs: [string, unknown, string, unknown][] = [
    ['cluster.etcd.tls.cert_file', etcd.tls.cert_file, 'cluster.etcd.tls.key_file', etcd.tls.key_file],
    ['cluster.etcd.username', etcd.username, 'cluster.etcd.password', etcd.password],
  ];
  for (const [a, av, b, bv] of pairs) {
    if (!ok(a, b)) continue;
    if (av !== undefined && bv === undefined) problems.push(`${b}: required with ${a}`);
    if (av === undefined && bv !== undefined) problems.push(`${a}: required with ${b}`);
  }
  return problems;
}

/** At least one listener; HTTPS needs its certificate and key, verify_incoming its CA. */
function listenerProblems(v: ConfigValues, ok: (...paths: string[]) => boolean): string[] {
  const problems: string[] = [];
  if (ok('ports.http', 'ports.https') && v.ports.http === -1 && v.ports.https === -1) {
    problems.push('ports.http: -1 disables plain HTTP, and ports.https is not set: the agent would serve nothing');
  }
  // What the HTTPS API gets: tls.https over tls.defaults, as in Consul.
  const { defaults, https } = v.tls;
  if (ok('ports.https') && v.ports.https !== -1) {
    if ((https.cert_file ?? defaults.cert_file) === undefined)
      problems.push('tls.defaults.cert_file: required with ports.https');
    if ((https.key_file ?? defaults.key_file) === undefined)
      problems.push('tls.defaults.key_file: required with ports.https');
  }
  const verify = https.verify_incoming === undefined ? 'tls.defaults.verify_incoming' : 'tls.https.verify_incoming';
  if (
    ok(verify) &&
    (https.verify_incoming ?? defaults.verify_incoming) &&
    (https.ca_file ?? defaults.ca_file) === undefined
  ) {
    problems.push(`tls.defaults.ca_file: required with ${verify}`);
  }
  return problems;
}
