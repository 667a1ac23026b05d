// Reading config sources as Consul does: `-config-file` and `-config-dir` in the order given, a
// directory's `.json` and `.hcl` files in lexical order, JSON or HCL by extension. HCL blocks come
// out of the parser as lists of bodies (`acl { … }` is `{ acl: [ { … } ] }`); they are folded
// back into objects, so both formats give the same tree. Problems name the file.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describeFsError } from '../core/error-text.js';
import { HclSyntaxError, hclToObject } from '../core/hcl.js';
import { findJsonSyntaxError } from './json-error.js';
import { deepMerge, isPlainObject, type PlainObject } from './object.js';
import { foldRegistration } from './registrations.js';

export interface ConfigPath {
  readonly kind: 'file' | 'dir';
  readonly path: string;
}

/** One file's values, or why it gave none. */
export type ConfigSource =
  { readonly path: string; readonly values: PlainObject } | { readonly path: string; readonly problem: string };

const FORMATS = ['.json', '.hcl'];
const REGISTRATION_KEYS = new Set(['service', 'services', 'check', 'checks']);

export async function readConfigSources(paths: readonly ConfigPath[]): Promise<ConfigSource[]> {
  const sources: ConfigSource[] = [];
  for (const entry of paths) {
    if (entry.kind === 'file') {
      sources.push(await readConfigFile(entry.path));
      continue;
    }
    let names: string[];
    try {
      names = await readdir(entry.path);
    } catch (err) {
      sources.push({ path: entry.path, problem: `cannot read config directory: ${describeFsError(err)}` });
      continue;
    }
    for (const name of names.filter((n) => FORMATS.some((ext) => n.endsWith(ext))).sort()) {
      const path = join(entry.path, name);
      if ((await stat(path)).isDirectory()) continue;
      sources.push(await readConfigFile(path));
    }
  }
  return sources;
}

export async function readConfigFile(path: string): Promise<ConfigSource> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    return { path, problem: `cannot read config file: ${describeFsError(err)}` };
  }
  return path.endsWith('.hcl') ? parseHclConfig(path, text) : parseJsonConfig(path, text);
}

export function parseJsonConfig(path: string, raw: string): ConfigSource {
  // Editors on Windows may save a byte-order mark, which JSON.parse rejects.
  const text = raw.startsWith('\uFEFF') ? raw.slice(1) : raw;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    const at = findJsonSyntaxError(text);
    return {
      path,
      problem: at
        ? `invalid JSON at line ${at.line}, column ${at.column}: ${at.reason}`
        : `invalid JSON: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (!isPlainObject(parsed)) return { path, problem: 'expected a JSON object at the top level' };
  return { path, values: parsed };
}

export async function parseHclConfig(path: string, text: string): Promise<ConfigSource> {
  let parsed: Record<string, unknown>;
  try {
    parsed = await hclToObject(text);
  } catch (err) {
    if (err instanceof HclSyntaxError) return { path, problem: `invalid HCL: ${err.detail}` };
    throw err;
  }
  // Registration blocks (service, check) may repeat and hold lists: they are folded apart.
  const registrations = Object.entries(parsed).filter(([key]) => REGISTRATION_KEYS.has(key));
  const rest = Object.fromEntries(Object.entries(parsed).filter(([key]) => !REGISTRATION_KEYS.has(key)));
  const values = foldBlocks(rest) as PlainObject;
  for (const [key, value] of registrations) values[key] = foldRegistration(value, key);
  return { path, values };
}

/** `{ acl: [ { tokens: [ { … } ] } ] }` → `{ acl: { tokens: { … } } }`; a block given twice is merged. */
export function foldBlocks(value: unknown): unknown {
  if (Array.isArray(value)) {
    if (value.length > 0 && value.every(isPlainObject))
      return deepMerge(...value.map((body) => foldBlocks(body) as PlainObject));
    return value.map(foldBlocks);
  }
  if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([key, v]) => [key, foldBlocks(v)]));
  return value;
}
