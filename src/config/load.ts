// Start-up config loading: read the JSON files, stack defaults < files (in order) < command-line
// flags, validate once, and hand back a deep-frozen AgentConfig. Every problem found is reported
// together in one ConfigError; a deprecated setting is a warning, not a problem (deprecated.ts).
import { readFileSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { resolveAliases } from './aliases.js';
import { toAgentConfig } from './convert.js';
import { dropDeprecated } from './deprecated.js';
import { ConfigError } from './errors.js';
import { findJsonSyntaxError } from './json-error.js';
import { deepFreeze, deepMerge, isPlainObject, type PlainObject } from './object.js';
import type { RawConfig } from './schema.js';
import type { AgentConfig } from './types.js';
import { unknownKeys, validateValues } from './validate.js';

/** The machine as the loader sees it; tests hand in their own. */
export interface LoadEnv {
  hostname(): string;
  /** File contents as UTF-8; throws a Node fs error when unreadable. */
  readFile(path: string): string;
  /** true / false for an existing path, undefined when nothing is there. */
  isDirectory(path: string): boolean | undefined;
}

export const systemEnv: LoadEnv = {
  hostname,
  readFile: (path) => readFileSync(path, 'utf8'),
  isDirectory: (path) => statSync(path, { throwIfNoEntry: false })?.isDirectory(),
};

export interface LoadInput {
  /** JSON config files, lowest priority first. */
  readonly files: readonly string[];
  /** Values from the command line; they override every file. */
  readonly flags: RawConfig;
  /** -dev: state in memory, so data_dir becomes optional. */
  readonly dev: boolean;
  readonly env?: LoadEnv;
  /**
   * Receives each warning about a deprecated setting, prefixed with where it was set; without it,
   * warnings go to process.emitWarning as DeprecationWarning.
   */
  readonly warn?: (message: string) => void;
}

/** The code of the DeprecationWarning loadConfig emits when given no `warn`. */
export const CONFIG_DEPRECATION_CODE = 'SVC_CONFIG_DEPRECATED';

/** Loads, validates and freezes the agent config; throws ConfigError listing every problem. */
export function loadConfig(input: LoadInput): AgentConfig {
  const env = input.env ?? systemEnv;

  const fileProblems: string[] = [];
  const warnings: string[] = [];
  const layers: { readonly path: string; readonly values: PlainObject }[] = [];
  for (const path of input.files) {
    const read = readConfigFile(path, env, fileProblems);
    if (read === undefined) continue;
    const { values, problems } = resolveAliases(read);
    fileProblems.push(...problems.map((p) => `${path}: ${p}`));
    const current = dropDeprecated(values);
    warnings.push(...current.warnings.map((w) => `${path}: ${w}`));
    layers.push({ path, values: current.values });
  }
  // A file that could not be read leaves the merged view incomplete, so judging the values would
  // only add misleading problems (e.g. data_dir "missing" because it was in that file).
  if (fileProblems.length > 0) throw new ConfigError(fileProblems);

  const currentFlags = dropDeprecated(input.flags as PlainObject);
  warnings.push(...currentFlags.warnings.map((w) => `command line: ${w}`));
  const flags = currentFlags.values;
  const problems = [
    ...layers.flatMap((layer) => unknownKeys(layer.values).map((p) => `${layer.path}: ${p}`)),
    ...unknownKeys(flags).map((p) => `command line: ${p}`),
  ];
  const merged = deepMerge(...layers.map((layer) => layer.values), flags);
  const result = validateValues(merged, { hostname: env.hostname(), dev: input.dev });
  if (!result.ok) problems.push(...result.problems);
  // Consul's check, kept out of validate.ts because it touches the disk. A missing directory is
  // fine: the store creates it.
  const dataDir = merged['data_dir'];
  if (typeof dataDir === 'string' && dataDir !== '' && env.isDirectory(dataDir) === false) {
    problems.push(`data_dir: ${JSON.stringify(dataDir)} is not a directory`);
  }

  // The TLS files are read at start-up; one that cannot be read is named now, with its key.
  if (result.ok) {
    const tls = result.values.cluster.etcd.tls;
    for (const [name, path] of [['ca_file', tls.ca_file], ['cert_file', tls.cert_file], ['key_file', tls.key_file]] as const) {
      if (path === undefined) continue;
      try {
        env.readFile(path);
      } catch (err) {
        problems.push(`cluster.etcd.tls.${name}: cannot read ${JSON.stringify(path)}: ${describeFsError(err)}`);
      }
    }
  }

  if (!result.ok || problems.length > 0) throw new ConfigError(problems);
  const warn = input.warn ?? ((message: string) => process.emitWarning(message, { type: 'DeprecationWarning', code: CONFIG_DEPRECATION_CODE }));
  for (const message of warnings) warn(message);
  return deepFreeze(toAgentConfig(result.values, input.dev));
}

function readConfigFile(path: string, env: LoadEnv, problems: string[]): PlainObject | undefined {
  let text: string;
  try {
    text = env.readFile(path);
  } catch (err) {
    problems.push(`${path}: cannot read config file: ${describeFsError(err)}`);
    return undefined;
  }
  // Editors on Windows may save a byte-order mark, which JSON.parse rejects.
  if (text.startsWith('\uFEFF')) text = text.slice(1);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    const at = findJsonSyntaxError(text);
    problems.push(
      at
        ? `${path}: invalid JSON at line ${at.line}, column ${at.column}: ${at.reason}`
        : `${path}: invalid JSON: ${err instanceof Error ? err.message : String(err)}`,
    );
    return undefined;
  }
  if (!isPlainObject(parsed)) {
    problems.push(`${path}: expected a JSON object at the top level`);
    return undefined;
  }
  return parsed;
}

function describeFsError(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES') return 'permission denied';
  if (code === 'EISDIR') return 'is a directory';
  return err instanceof Error ? err.message : String(err);
}
