// The one intention validator (docs/decisions.md D10) behind both write APIs: the legacy ID API
// reports every problem in Consul's multi-error text, the `/exact` API the first one; either way a
// 400 (docs/decisions.md D3); a valid one over our size limits is then a 413. Normalising
// (defaults, upper-cased methods) happens first, as in Consul, so a lower-case "get" is stored as
// "GET" rather than refused.
import { agentError } from '../../core/errors.js';
import { escapeGoHtml } from '../../core/go-json.js';
import { limitBytes, limitJson } from '../../core/size-limits.js';
import type { HeaderPermission, IntentionAction, IntentionPermission, StoredIntention } from './model.js';
import { intentionPrecedence, WILDCARD } from './precedence.js';

/** What a write asks for, fields as decoded from the body (absent when not given). */
export interface IntentionInput {
  readonly ID?: string | undefined;
  readonly Description?: string | undefined;
  readonly SourceNS?: string | undefined;
  readonly SourceName?: string | undefined;
  readonly DestinationNS?: string | undefined;
  readonly DestinationName?: string | undefined;
  readonly SourcePartition?: string | undefined;
  readonly DestinationPartition?: string | undefined;
  readonly SourcePeer?: string | undefined;
  readonly SourceType?: string | undefined;
  readonly Action?: string | undefined;
  readonly Permissions?: readonly IntentionPermission[] | undefined;
  readonly Meta?: Readonly<Record<string, string>> | undefined;
}

/** The input with defaults applied: what is validated and, once valid, stored. */
export interface IntentionCandidate {
  readonly Description: string;
  readonly SourceNS: string;
  readonly SourceName: string;
  readonly DestinationNS: string;
  readonly DestinationName: string;
  readonly SourcePartition: string;
  readonly DestinationPartition: string;
  readonly SourcePeer: string;
  readonly SourceType: string;
  readonly Action: string;
  readonly Permissions: readonly IntentionPermission[];
  readonly Meta: Readonly<Record<string, string>>;
}

export type WriteApi = 'legacy' | 'exact';

// Consul's limits on opaque values (structs metaMaxKeyPairs, metaKeyMaxLength, metaValueMaxLength).
export const META_MAX_PAIRS = 64;
export const META_KEY_MAX_LENGTH = 128;
export const META_VALUE_MAX_LENGTH = 512;
export const DESCRIPTION_MAX_LENGTH = 512;
// Ours, where Consul has none (docs/decisions.md#size-limits): the catalog's limit on a service
// name, for the names and namespaces; a few dozen L7 rules, as JSON, for Permissions.
export const NAME_MAX_BYTES = 256;
export const PERMISSIONS_MAX_JSON = 16 * 1024;

/** Go's net/http method constants: the only methods an HTTP permission may name. */
const HTTP_METHODS: ReadonlySet<string> = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'CONNECT',
  'OPTIONS',
  'TRACE',
]);

/** Fills defaults: empty namespaces take `defaultNamespace`, an empty SourceType is `consul`. */
export function normalizeIntention(input: IntentionInput, defaultNamespace: string): IntentionCandidate {
  return {
    Description: input.Description ?? '',
    SourceNS: input.SourceNS || defaultNamespace,
    SourceName: input.SourceName ?? '',
    DestinationNS: input.DestinationNS || defaultNamespace,
    DestinationName: input.DestinationName ?? '',
    SourcePartition: input.SourcePartition ?? '',
    DestinationPartition: input.DestinationPartition ?? '',
    SourcePeer: input.SourcePeer ?? '',
    SourceType: input.SourceType || 'consul',
    Action: input.Action ?? '',
    Permissions: (input.Permissions ?? []).map(upperCaseMethods),
    Meta: input.Meta ?? {},
  };
}

function upperCaseMethods(p: IntentionPermission): IntentionPermission {
  if (p.HTTP?.Methods === undefined) return p;
  return { ...p, HTTP: { ...p.HTTP, Methods: p.HTTP.Methods.map((m) => m.toUpperCase()) } };
}

/** Every problem with the candidate, in Consul's order; empty when it may be stored. */
export function intentionProblems(x: IntentionCandidate, api: WriteApi): string[] {
  const problems: string[] = [];
  const add = (message: string): void => void problems.push(message);

  if (x.SourceNS === '') add('SourceNS must be set');
  if (x.SourceName === '') add('SourceName must be set');
  if (x.DestinationNS === '') add('DestinationNS must be set');
  if (x.DestinationName === '') add('DestinationName must be set');

  wildcards(x.SourceNS, x.SourceName, 'SourceNS', 'SourceName', add);
  wildcards(x.DestinationNS, x.DestinationName, 'DestinationNS', 'DestinationName', add);

  // Partitions and peers are out of scope (docs/decisions.md D2): only `default` exists.
  if (!isDefaultPartition(x.SourcePartition)) add('Cannot specify a source partition with this endpoint');
  if (!isDefaultPartition(x.DestinationPartition)) add('Cannot specify a destination partition with this endpoint');
  if (x.SourcePeer !== '') add('SourcePeer field is not supported on this endpoint. Use config entries instead');

  if (Buffer.byteLength(x.Description) > DESCRIPTION_MAX_LENGTH)
    add(`Description exceeds maximum length ${DESCRIPTION_MAX_LENGTH}`);
  metaProblems(x.Meta, add);

  const l7 = x.Permissions.length > 0;
  if (api === 'legacy') {
    if (!isAction(x.Action)) add("Action must be set to 'allow' or 'deny'");
    if (l7) add('Permissions must not be set when using the legacy APIs');
  } else {
    if (!l7 && !isAction(x.Action)) add("Action must be set to 'allow' or 'deny'");
    if (l7 && x.Action !== '') add('Action must be omitted if Permissions are specified');
    if (l7 && (x.DestinationNS === WILDCARD || x.DestinationName === WILDCARD)) {
      add('Permissions cannot be specified on intentions with wildcarded destinations');
    }
  }

  if (x.SourceType !== 'consul') add("SourceType must be set to 'consul'");

  if (api === 'exact') x.Permissions.forEach((p, j) => permissionProblems(p, j, add));
  return problems;
}

function wildcards(ns: string, name: string, nsField: string, nameField: string, add: (m: string) => void): void {
  if (ns !== WILDCARD && ns.includes(WILDCARD))
    add(`${nsField}: wildcard character '*' cannot be used with partial values`);
  if (name !== WILDCARD) {
    if (name.includes(WILDCARD)) add(`${nameField}: wildcard character '*' cannot be used with partial values`);
    if (ns === WILDCARD) add(`${nameField}: exact value cannot follow wildcard namespace`);
  }
}

function metaProblems(meta: Readonly<Record<string, string>>, add: (m: string) => void): void {
  const keys = Object.keys(meta);
  if (keys.length > META_MAX_PAIRS) add(`Meta exceeds maximum element count ${META_MAX_PAIRS}`);
  for (const key of keys.sort()) {
    if (Buffer.byteLength(key) > META_KEY_MAX_LENGTH)
      add(`Meta key ${goQuote(key)} exceeds maximum length ${META_KEY_MAX_LENGTH}`);
    if (Buffer.byteLength(meta[key] as string) > META_VALUE_MAX_LENGTH) {
      add(`Meta value for key ${goQuote(key)} exceeds maximum length ${META_VALUE_MAX_LENGTH}`);
    }
  }
}

/** Consul's checks of one L7 permission (its config-entry validation), first problem only. */
function permissionProblems(p: IntentionPermission, j: number, add: (m: string) => void): void {
  const at = `Permissions[${j}]`;
  if (!isAction(p.Action)) return add(`${at}.Action must be set to 'allow' or 'deny'`);
  const http = p.HTTP;
  if (http === undefined) return add(`${at}.HTTP is required`);
  let parts = 0;
  if (http.PathExact) {
    parts++;
    if (!http.PathExact.startsWith('/'))
      return add(`${at}.HTTP.PathExact doesn't start with '/': ${goQuote(http.PathExact)}`);
  }
  if (http.PathPrefix) {
    parts++;
    if (!http.PathPrefix.startsWith('/'))
      return add(`${at}.HTTP.PathPrefix doesn't start with '/': ${goQuote(http.PathPrefix)}`);
  }
  if (http.PathRegex) parts++;
  if (parts > 1) return add(`${at}.HTTP should only contain at most one of PathExact, PathPrefix, or PathRegex`);
  const headers = http.Header ?? [];
  for (let k = 0; k < headers.length; k++) {
    const h = headers[k] as HeaderPermission;
    if (!h.Name) return add(`${at}.HTTP.Header[${k}] missing required Name field`);
    const kinds = [h.Present === true, !!h.Exact, !!h.Regex, !!h.Prefix, !!h.Suffix].filter(Boolean).length;
    if (kinds !== 1)
      return add(`${at}.HTTP.Header[${k}] should only contain one of Present, Exact, Prefix, Suffix, or Regex`);
    parts++;
  }
  const methods = http.Methods ?? [];
  if (methods.length > 0) {
    const seen = new Set<string>();
    for (const m of methods) {
      if (!HTTP_METHODS.has(m)) return add(`${at}.HTTP.Methods contains an invalid method ${goQuote(m)}`);
      if (seen.has(m)) return add(`${at}.HTTP.Methods contains ${goQuote(m)} more than once`);
      seen.add(m);
    }
    parts++;
  }
  if (parts === 0) add(`${at}.HTTP should not be empty`);
}

function isAction(action: string): action is IntentionAction {
  return action === 'allow' || action === 'deny';
}

function isDefaultPartition(partition: string): boolean {
  return partition === '' || partition === 'default';
}

/** Go's %q for the printable strings these messages quote. */
function goQuote(s: string): string {
  return escapeGoHtml(JSON.stringify(s));
}

/** go-multierror's text: `1 error occurred:\n\t* …\n\n`, or `N errors occurred:\n\t* …\n\t* …\n\n`. */
export function multiErrorText(problems: readonly string[]): string {
  const head = problems.length === 1 ? '1 error occurred:' : `${problems.length} errors occurred:`;
  return `${head}\n\t${problems.map((p) => `* ${p}`).join('\n\t')}\n\n`;
}

/** Throws the 400 for a candidate that fails validation, worded for the API it came through. */
export function assertValidIntention(x: IntentionCandidate, api: WriteApi): void {
  const problems = intentionProblems(x, api);
  if (problems.length > 0) {
    throw agentError('INTENTION_INVALID', {
      problems: api === 'legacy' ? multiErrorText(problems) : (problems[0] as string),
    });
  }
  limitIntention(x);
}

/** Our size limits (413), once Consul's rules (its Description and Meta limits among them) pass. */
export function limitIntention(x: IntentionCandidate): void {
  limitBytes('SourceNS', x.SourceNS, NAME_MAX_BYTES);
  limitBytes('SourceName', x.SourceName, NAME_MAX_BYTES);
  limitBytes('DestinationNS', x.DestinationNS, NAME_MAX_BYTES);
  limitBytes('DestinationName', x.DestinationName, NAME_MAX_BYTES);
  if (x.Permissions.length > 0) limitJson('Permissions', x.Permissions, PERMISSIONS_MAX_JSON);
}

/** The stored form of a valid candidate: precedence computed now (on save, never on read). */
export function storedIntention(
  x: IntentionCandidate,
  legacy?: { ID: string; CreatedAt: string; UpdatedAt: string; Hash: string },
  order?: number,
): StoredIntention {
  const l7 = x.Permissions.length > 0;
  const base = {
    Description: x.Description,
    SourceNS: x.SourceNS,
    SourceName: x.SourceName,
    DestinationNS: x.DestinationNS,
    DestinationName: x.DestinationName,
    SourceType: 'consul' as const,
    ...(l7 ? { Permissions: x.Permissions } : { Action: x.Action as IntentionAction }),
    ...(Object.keys(x.Meta).length > 0 ? { Meta: x.Meta } : {}),
    Precedence: intentionPrecedence(x.SourceNS, x.SourceName, x.DestinationNS, x.DestinationName),
    ...(order === undefined ? {} : { Order: order }),
  };
  return legacy === undefined ? base : { ...legacy, ...base };
}
