// What every config entry kind declares: its fields (Consul's struct, in its JSON order), its
// Normalize and Validate (Consul's rules and texts), and which ACL rules read and write it
// (Consul's CanRead and CanWrite). docs/decisions.md#config-entries.
import type { Access, Resource } from '../acl/types.js';
import { multiErrorText } from '../connect/intentions/validate.js';
import { BOOL, goQuote, sliceOf, STRING, struct, type Field, type GoStruct } from './decode.js';

export const SERVICE_DEFAULTS = 'service-defaults';
export const PROXY_DEFAULTS = 'proxy-defaults';
export const SERVICE_RESOLVER = 'service-resolver';
export const SERVICE_SPLITTER = 'service-splitter';
export const SERVICE_ROUTER = 'service-router';
export const SERVICE_INTENTIONS = 'service-intentions';

export const PROXY_CONFIG_GLOBAL = 'global';
export const WILDCARD = '*';

/** One permission a read or write needs: Consul's Service/Intention/Mesh *Allowed checks. */
export interface Permission {
  readonly resource: Resource;
  readonly access: Access;
  readonly name?: string;
}

export interface KindSpec {
  readonly kind: string;
  /** The struct's fields in Consul's JSON order, Kind and Name among them, CreateIndex and ModifyIndex not. */
  readonly fields: readonly Field[];
  /** Normalize (defaults, case, computed fields) in place; an error text, or undefined. */
  normalize(e: GoStruct): string | undefined;
  /** Validate, after Normalize; an error text, or undefined. */
  validate(e: GoStruct): string | undefined;
  /** What reading the entry named so needs (none: anyone may read it). */
  canRead(name: string): readonly Permission[];
  /** What writing it needs: each in order, the first missing one denied. */
  canWrite(e: GoStruct): readonly Permission[];
}

// Consul's limits on an entry's Meta (structs metaMaxKeyPairs, metaKeyMaxLength, metaValueMaxLength).
export const META_MAX_PAIRS = 64;
export const META_KEY_MAX_LENGTH = 128;
export const META_VALUE_MAX_LENGTH = 512;

/** A go-multierror being built: problems appended, its text once there is one. */
export class Problems {
  readonly list: string[] = [];
  add(message: string): void {
    this.list.push(message);
  }
  /** Appends another multierror's problems flat, as multierror.Append does. */
  addAll(other: readonly string[]): void {
    this.list.push(...other);
  }
  text(): string | undefined {
    return this.list.length === 0 ? undefined : multiErrorText(this.list);
  }
}

/** validateConfigEntryMeta's problems; Go ranges over a map in random order: sorted here. */
export function metaProblems(meta: Readonly<Record<string, string>> | undefined): string[] {
  const out: string[] = [];
  if (meta === undefined) return out;
  const keys = Object.keys(meta).sort();
  if (keys.length > META_MAX_PAIRS) out.push(`Meta exceeds maximum element count ${META_MAX_PAIRS}`);
  for (const k of keys) {
    if (Buffer.byteLength(k) > META_KEY_MAX_LENGTH)
      out.push(`Meta key ${goQuote(k)} exceeds maximum length ${META_KEY_MAX_LENGTH}`);
    if (Buffer.byteLength(meta[k] as string) > META_VALUE_MAX_LENGTH)
      out.push(`Meta value for key ${goQuote(k)} exceeds maximum length ${META_VALUE_MAX_LENGTH}`);
  }
  return out;
}

/** The meta check as a plain error where Consul returns it alone (validateConfigEntryMeta's multierror). */
export function metaError(meta: Readonly<Record<string, string>> | undefined): string | undefined {
  const problems = metaProblems(meta);
  return problems.length === 0 ? undefined : multiErrorText(problems);
}

export function str(e: GoStruct, name: string): string {
  return (e[name] as string | undefined) ?? '';
}

export function sub(e: GoStruct, name: string): GoStruct | undefined {
  return e[name] as GoStruct | undefined;
}

export function list(e: GoStruct, name: string): GoStruct[] {
  return (e[name] as GoStruct[] | undefined) ?? [];
}

export function strings(e: GoStruct, name: string): string[] {
  return (e[name] as string[] | undefined) ?? [];
}

/** Go's net/http method constants: the methods a route or permission may name. */
/** The path and header matches a router's HTTP match and an intention's HTTP permission share. */
export const HTTP_MATCH_FIELDS: readonly Field[] = [
  { name: 'PathExact', alias: 'path_exact', type: STRING, omitEmpty: true },
  { name: 'PathPrefix', alias: 'path_prefix', type: STRING, omitEmpty: true },
  { name: 'PathRegex', alias: 'path_regex', type: STRING, omitEmpty: true },
  {
    name: 'Header',
    type: sliceOf(
      struct([
        { name: 'Name', type: STRING },
        { name: 'Present', type: BOOL, omitEmpty: true },
        { name: 'Exact', type: STRING, omitEmpty: true },
        { name: 'Prefix', type: STRING, omitEmpty: true },
        { name: 'Suffix', type: STRING, omitEmpty: true },
        { name: 'Regex', type: STRING, omitEmpty: true },
        { name: 'Invert', type: BOOL, omitEmpty: true },
      ]),
    ),
    omitEmpty: true,
  },
];

export const HTTP_METHODS: ReadonlySet<string> = new Set([
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

/** Common fields: the entry's Meta, and the raft indexes a client may send back (decoded, dropped). */
export const META_FIELD: Field = { name: 'Meta', type: { t: 'map', of: { t: 'string' } }, omitEmpty: true };
export const KIND_FIELD: Field = { name: 'Kind', type: { t: 'string' } };
export const NAME_FIELD: Field = { name: 'Name', type: { t: 'string' } };
export const RAFT_FIELDS: readonly Field[] = [
  { name: 'CreateIndex', type: { t: 'uint' }, ignored: true },
  { name: 'ModifyIndex', type: { t: 'uint' }, ignored: true },
];
