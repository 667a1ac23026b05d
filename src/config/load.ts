// Start-up config loading: read the JSON files, stack defaults < files (in order) < command-line
// flags, validate once, and hand back a deep-frozen AgentConfig. Every problem found is reported
// together in one ConfigError; a deprecated setting (deprecated.ts, consul-renames.ts) and a
// Consul key the agent does not implement (known-keys.ts) are warnings, not problems.
import { readFileSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { describeFsError } from '../core/error-text.js';
import { resolveAliases } from './aliases.js';
import { accessSettingProblems } from './access-settings.js';
import { toAgentConfig } from './convert.js';
import { dropDeprecated } from './deprecated.js';
import { ConfigError } from './errors.js';
import { checkKeys, ignoredWarning } from './known-keys.js';
import { moveConsulRenames } from './consul-renames.js';
import { deepFreeze, deepMerge, isPlainObject, type PlainObject } from './object.js';
import { takeRegistrations } from './registrations.js';
import { parseJsonConfig, type ConfigSource } from './sources.js';
import type { RawConfig } from './schema.js';
import type { AgentConfig } from './types.js';
import { validateValues } from './validate.js';
import { resolveAdvertise, type HostAddress } from './addresses.js';
import { hostAddresses } from './host-addresses.js';

/** The machine as the loader sees it; tests hand in their own. */
export interface LoadEnv {
  hostname(): string;
  /** File contents as UTF-8; throws a Node fs error when unreadable. */
  readFile(path: string): string;
  /** true / false for an existing path, undefined when nothing is there. */
  isDirectory(path: string): boolean | undefined;
  /** This host's addresses, for advertise_addr and its templates. */
  hostAddresses(): readonly HostAddress[];
}

export const systemEnv: LoadEnv = {
  hostname,
  readFile: (path) => readFileSync(path, 'utf8'),
  isDirectory: (path) => statSync(path, { throwIfNoEntry: false })?.isDirectory(),
  hostAddresses,
};

export interface LoadInput {
  /** JSON config files, lowest priority first (read here, synchronously). */
  readonly files?: readonly string[];
  /** Config already read (readConfigSources: JSON and HCL files, directories), lowest priority first; after `files`. */
  readonly sources?: readonly ConfigSource[];
  /** Values from the command line; they override every file. */
  readonly flags: RawConfig;
  /** -dev: state in memory, so data_dir becomes optional. */
  readonly dev: boolean;
  readonly env?: LoadEnv;
  /**
   * Receives each warning about a deprecated or ignored setting, prefixed with where it was set;
   * without it, warnings go to process.emitWarning as DeprecationWarning.
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
  const services: PlainObject[] = [];
  const checks: PlainObject[] = [];
  const sources = [...(input.files ?? []).map((path) => readJsonFile(path, env)), ...(input.sources ?? [])];
  for (const source of sources) {
    if ('problem' in source) {
      fileProblems.push(`${source.path}: ${source.problem}`);
      continue;
    }
    const path = source.path;
    const { values, problems } = resolveAliases(source.values);
    fileProblems.push(...problems.map((p) => `${path}: ${p}`));
    const moved = moveConsulRenames(values);
    const current = dropDeprecated(moved.values);
    warnings.push(...[...moved.warnings, ...current.warnings].map((w) => `${path}: ${w}`));
    const taken = takeRegistrations(current.values, path);
    fileProblems.push(...taken.problems.map((p) => `${path}: ${p}`));
    services.push(...taken.registrations.services);
    checks.push(...taken.registrations.checks);
    layers.push({ path, values: taken.values });
  }
  // A file that could not be read leaves the merged view incomplete, so judging the values would
  // only add misleading problems (e.g. data_dir "missing" because it was in that file).
  if (fileProblems.length > 0) throw new ConfigError(fileProblems);

  const currentFlags = dropDeprecated(input.flags as PlainObject);
  warnings.push(...currentFlags.warnings.map((w) => `command line: ${w}`));
  const flags = currentFlags.values;
  const problems: string[] = [];
  for (const [source, values] of [
    ...layers.map((l) => [l.path, l.values] as const),
    ['command line', flags] as const,
  ]) {
    const keys = checkKeys(values);
    problems.push(...keys.problems.map((p) => `${source}: ${p}`));
    warnings.push(...keys.ignored.map((key) => `${source}: ${ignoredWarning(key)}`));
  }
  const merged = deepMerge(...layers.map((layer) => layer.values), flags);
  const result = validateValues(merged, { hostname: env.hostname(), dev: input.dev });
  if (!result.ok) problems.push(...result.problems.map((problem) => withSource(problem, layers, flags)));
  // Consul's check, kept out of validate.ts because it touches the disk. A missing directory is
  // fine: the store creates it.
  const dataDir = merged['data_dir'];
  if (typeof dataDir === 'string' && dataDir !== '' && env.isDirectory(dataDir) === false) {
    problems.push(`data_dir: ${JSON.stringify(dataDir)} is not a directory`);
  }

  if (result.ok)
    problems.push(...accessSettingProblems(merged, result.values).map((problem) => withSource(problem, layers, flags)));

  // The TLS files are read at start-up; one that cannot be read is named now, with its key.
  if (result.ok) {
    const tls = result.values.cluster.etcd.tls;
    for (const [name, path] of [
      ['ca_file', tls.ca_file],
      ['cert_file', tls.cert_file],
      ['key_file', tls.key_file],
    ] as const) {
      if (path === undefined) continue;
      try {
        env.readFile(path);
      } catch (err) {
        problems.push(`cluster.etcd.tls.${name}: cannot read ${JSON.stringify(path)}: ${describeFsError(err)}`);
      }
    }
  }

  // Read from the host's interfaces, as Consul resolves its templates when it loads its config.
  const advertised = result.ok
    ? resolveAdvertise(
        {
          clientAddr: result.values.client_addr,
          bindAddr: result.values.bind_addr,
          advertiseAddr: result.values.advertise_addr,
          advertiseAddrWan: result.values.advertise_addr_wan,
        },
        env.hostAddresses(),
      )
    : undefined;
  if (advertised?.ok === false) problems.push(...advertised.problems);

  if (!result.ok || problems.length > 0 || advertised?.ok !== true) throw new ConfigError(problems);
  const warn =
    input.warn ??
    ((message: string) => process.emitWarning(message, { type: 'DeprecationWarning', code: CONFIG_DEPRECATION_CODE }));
  for (const message of warnings) warn(message);
  return deepFreeze(toAgentConfig(result.values, input.dev, { services, checks }, advertised));
}

function readJsonFile(path: string, env: LoadEnv): ConfigSource {
  try {
    return parseJsonConfig(path, env.readFile(path));
  } catch (err) {
    return { path, problem: `cannot read config file: ${describeFsError(err)}` };
  }
}

/** Prefixes a value problem (`key: …`) with the file that last set the key; a flag's stays as it is. */
function withSource(
  problem: string,
  layers: readonly { readonly path: string; readonly values: PlainObject }[],
  flags: PlainObject,
): string {
  const key = problem.slice(0, problem.indexOf(':'));
  if (key === '' || key.includes(' ')) return problem;
  if (hasPath(flags, key)) return problem;
  for (let i = layers.length - 1; i >= 0; i--) {
    const layer = layers[i] as { readonly path: string; readonly values: PlainObject };
    if (hasPath(layer.values, key)) return `${layer.path}: ${problem}`;
  }
  return problem;
}

function hasPath(tree: PlainObject, dotted: string): boolean {
  let node: unknown = tree;
  for (const part of dotted.split('.')) {
    if (!isPlainObject(node) || !Object.prototype.hasOwnProperty.call(node, part)) return false;
    node = node[part];
  }
  return true;
}
