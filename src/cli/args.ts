// Command-line parsing in Consul's (Go flag package) style: single-dash long flags, `-x value`,
// `-x=value` and `--x` all work, errors use Go's wording. Subcommands and help text live here too;
// flag docs come from the config schema, so `-help` and the config keys cannot drift apart.
import yargsParser from 'yargs-parser';
import { describeDefault, findConfigKey, type RawConfig } from '../config/schema.js';
import { CLIENT_WORDS, clientCommandList } from './client/index.js';
import { parseGoBool } from './go-bool.js';
import { UsageError, unknownFlag, usageError } from './usage-error.js';
import { loadtestHelp } from './loadtest/cli.js';
import type { ConfigPath } from '../config/sources.js';

export { UsageError };

interface FlagSpec {
  readonly name: string;
  /** Dotted config key the flag sets; its doc and default come from the schema. */
  readonly key?: string;
  /** `list`: repeatable, every value kept in order (a config key holding a list). */
  readonly kind: 'bool' | 'string' | 'int' | 'files' | 'list';
  /** Placeholder in help text. */
  readonly placeholder?: string;
  /** For flags that map to no config key. */
  readonly doc?: string;
}

const AGENT_FLAGS: readonly FlagSpec[] = [
  { name: 'dev', kind: 'bool', doc: 'Development mode: state is kept in memory and data_dir is optional.' },
  {
    name: 'config-file',
    kind: 'files',
    placeholder: 'path',
    doc: 'A config file, JSON or HCL (by its .hcl extension). Repeat to load several; later files override earlier ones, flags override all files.',
  },
  {
    name: 'config-dir',
    kind: 'files',
    placeholder: 'path',
    doc: 'A directory whose .json and .hcl files are loaded in lexical order. Repeatable; files and directories load in the order given.',
  },
  { name: 'data-dir', key: 'data_dir', kind: 'string', placeholder: 'path' },
  { name: 'http-port', key: 'ports.http', kind: 'int', placeholder: 'port' },
  { name: 'https-port', key: 'ports.https', kind: 'int', placeholder: 'port' },
  { name: 'http-transport', key: 'http_config.transport', kind: 'string', placeholder: 'auto|uws|node' },
  { name: 'client', key: 'client_addr', kind: 'string', placeholder: 'address' },
  { name: 'bind', key: 'bind_addr', kind: 'string', placeholder: 'address' },
  { name: 'advertise', key: 'advertise_addr', kind: 'string', placeholder: 'address' },
  { name: 'advertise-wan', key: 'advertise_addr_wan', kind: 'string', placeholder: 'address' },
  { name: 'node', key: 'node_name', kind: 'string', placeholder: 'name' },
  { name: 'datacenter', key: 'datacenter', kind: 'string', placeholder: 'name' },
  { name: 'log-level', key: 'log_level', kind: 'string', placeholder: 'level' },
  { name: 'log-json', key: 'log_json', kind: 'bool' },
  { name: 'log-file', key: 'log_file', kind: 'string', placeholder: 'path' },
  { name: 'log-rotate-bytes', key: 'log_rotate_bytes', kind: 'int', placeholder: 'bytes' },
  { name: 'log-rotate-duration', key: 'log_rotate_duration', kind: 'string', placeholder: 'duration' },
  { name: 'log-rotate-max-files', key: 'log_rotate_max_files', kind: 'int', placeholder: 'count' },
  { name: 'server', key: 'server', kind: 'bool' },
  {
    name: 'etcd',
    key: 'cluster.etcd.endpoints',
    kind: 'list',
    placeholder: 'url',
    doc: 'An etcd client URL; repeat for each member.',
  },
  {
    name: 'accept-state-loss',
    kind: 'bool',
    doc: 'Start even though recovery found acknowledged writes missing (a deleted or cut WAL segment), continuing from what is left. A one-time operator decision, so it has no config key.',
  },
];

const FLAG_BY_NAME = new Map(AGENT_FLAGS.map((f) => [f.name, f]));
const HELP_FLAGS = new Set(['-h', '-help', '--help', '--h']);

export interface AgentArgs {
  readonly flags: RawConfig;
  /** -config-file and -config-dir, in the order given. */
  readonly config: readonly ConfigPath[];
  readonly dev: boolean;
  readonly acceptStateLoss: boolean;
}

/** Parses the arguments after `agent`; throws UsageError with Go's flag-package wording. */
export function parseAgentArgs(argv: readonly string[]): AgentArgs {
  const parsed = yargsParser(normalize(argv), {
    boolean: AGENT_FLAGS.filter((f) => f.kind === 'bool').map((f) => f.name),
    string: AGENT_FLAGS.filter((f) => f.kind !== 'bool').map((f) => f.name),
    configuration: {
      'short-option-groups': false, // -dev is one flag, not -d -e -v
      'camel-case-expansion': false, // keys stay as typed, so unknown ones are named as typed
      'boolean-negation': false, // Go has no --no-x
      'dot-notation': false,
      'parse-numbers': false, // integers are checked here, with a message naming the flag
      'parse-positional-numbers': false,
      'duplicate-arguments-array': true,
      'flatten-duplicate-arrays': true,
      'greedy-arrays': false,
      'populate--': true,
    },
  });

  const extra = [...parsed._.map(String), ...((parsed['--'] as string[] | undefined) ?? [])];
  const flags: Record<string, unknown> = {};
  let dev = false;
  let acceptStateLoss = false;
  for (const [name, raw] of Object.entries(parsed)) {
    if (name === '_' || name === '--') continue;
    const spec = FLAG_BY_NAME.get(name);
    if (spec === undefined) throw unknownFlag(name, FLAG_BY_NAME.keys());
    const values = (Array.isArray(raw) ? raw : [raw]) as unknown[];
    if (spec.kind === 'files') {
      for (const v of values) requireText(spec, String(v));
      continue;
    }
    if (spec.kind === 'list' && spec.key !== undefined) {
      setPath(
        flags,
        spec.key,
        values.map((v) => requireText(spec, String(v))),
      );
      continue;
    }
    // Go's flag package keeps the last of repeated flags.
    const last = values[values.length - 1];
    if (spec.kind === 'bool') {
      if (spec.name === 'accept-state-loss') acceptStateLoss = last === true;
      else if (spec.key === undefined) dev = last === true;
      else setPath(flags, spec.key, last === true);
    } else if (spec.key !== undefined) {
      setPath(flags, spec.key, spec.kind === 'int' ? parseInteger(spec, String(last)) : String(last));
    }
  }
  if (extra.length > 0) throw usageError('CLI_EXTRA_ARGUMENTS', { args: extra.join(' ') });
  return { flags: flags as RawConfig, config: configPathsInOrder(argv), dev, acceptStateLoss };
}

/** yargs groups values by flag; Consul loads files and directories in command-line order, so they are read in order here. */
function configPathsInOrder(argv: readonly string[]): ConfigPath[] {
  const paths: ConfigPath[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] as string;
    if (token === '--') break;
    const m = /^--?(config-file|config-dir)(?:=(.*))?$/s.exec(token);
    if (m === null) continue;
    const path = m[2] ?? argv[++i];
    if (path !== undefined) paths.push({ kind: m[1] === 'config-dir' ? 'dir' : 'file', path });
  }
  return paths;
}

/**
 * Go's flag semantics that yargs-parser lacks, applied before it runs. yargs reads `-data-dir`
 * followed by nothing (or by another flag) as an empty value; Go reports the missing argument, and
 * so do we (a negative number still counts as a value). Booleans take Go's spellings in `-dev=x`.
 */
function normalize(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] as string;
    out.push(token);
    if (token === '--') {
      out.push(...argv.slice(i + 1));
      break;
    }
    const m = /^--?([^=]+)(?:=(.*))?$/s.exec(token);
    const spec = m ? FLAG_BY_NAME.get(m[1] as string) : undefined;
    if (m === null || spec === undefined) continue;
    const inline = m[2];
    if (spec.kind === 'bool') {
      if (inline !== undefined) out[out.length - 1] = `--${spec.name}=${parseGoBool(spec.name, inline)}`;
      continue;
    }
    if (inline !== undefined) continue;
    const next = argv[i + 1];
    if (next === undefined || (next.startsWith('-') && !/^-\d/.test(next))) {
      throw usageError('CLI_FLAG_NEEDS_ARGUMENT', { flag: spec.name });
    }
    out.push(next);
    i++;
  }
  return out;
}

function parseInteger(spec: FlagSpec, value: string): number {
  if (!/^[+-]?\d+$/.test(value)) {
    throw usageError('CLI_FLAG_VALUE', { value, flag: spec.name, reason: 'expected an integer' });
  }
  return Number(value);
}

function requireText(spec: FlagSpec, value: string): string {
  if (value === '') {
    throw usageError('CLI_FLAG_VALUE', { value, flag: spec.name, reason: `expected a ${spec.placeholder ?? 'value'}` });
  }
  return value;
}

function setPath(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const parts = dotted.split('.');
  const last = parts.pop() as string;
  let node = target;
  for (const part of parts) {
    const child = (node[part] ??= {}) as Record<string, unknown>;
    node = child;
  }
  node[last] = value;
}

export type Command =
  | { readonly name: 'agent'; readonly args: AgentArgs }
  | { readonly name: 'version' }
  /** A client command (`kv get ...`): its words and flags, run by src/cli/client/. */
  | { readonly name: 'client'; readonly argv: readonly string[] }
  /** `loadtest <scenario> ...`, run by src/loadtest/. */
  | { readonly name: 'loadtest'; readonly argv: readonly string[] }
  /** `validate <file|dir>...`, run by validate.ts. */
  | { readonly name: 'validate'; readonly argv: readonly string[] }
  /** exitCode 0 when help was asked for, 1 when it is shown because no command was given. */
  | { readonly name: 'help'; readonly text: string; readonly exitCode: 0 | 1 };

/** Picks the subcommand from argv (without node and script); throws UsageError on a bad one. */
export function parseCommand(argv: readonly string[]): Command {
  const [first, ...rest] = argv;
  if (first === undefined) return { name: 'help', text: mainHelp(), exitCode: 1 };
  if (first === 'help' || HELP_FLAGS.has(first)) {
    return {
      name: 'help',
      text: rest[0] === 'agent' ? agentHelp() : rest[0] === 'loadtest' ? loadtestHelp() : mainHelp(),
      exitCode: 0,
    };
  }
  if (first === 'version' || first === '-version' || first === '--version' || first === '-v') {
    if (rest.length > 0) throw usageError('CLI_EXTRA_ARGUMENTS', { args: rest.join(' ') });
    return { name: 'version' };
  }
  if (first === 'agent') {
    const end = rest.indexOf('--');
    const options = end === -1 ? rest : rest.slice(0, end);
    if (options.some((a) => HELP_FLAGS.has(a))) return { name: 'help', text: agentHelp(), exitCode: 0 };
    return { name: 'agent', args: parseAgentArgs(rest) };
  }
  if (first === 'loadtest') return { name: 'loadtest', argv: rest };
  if (first === 'validate') return { name: 'validate', argv: rest };
  if (CLIENT_WORDS.has(first)) return { name: 'client', argv };
  throw usageError('CLI_UNKNOWN_COMMAND', {
    command: first,
    commands: `    agent\n    validate\n    version\n${clientCommandList()}`,
  });
}

export function mainHelp(): string {
  return [
    'Usage: svc-agent <command> [options]',
    '',
    'Commands:',
    '    agent      Runs a service-mesh agent',
    '    version    Prints the version',
    '    loadtest   Puts load on a running agent and reports what it measured (help loadtest)',
    '    validate   Checks config files and directories as the agent would load them (exit 0 valid, 1 not)',
    '    help       Shows this help (help agent, help loadtest: their options)',
    '',
    'Client commands (they talk to a running agent: -http-addr or SVC_HTTP_ADDR, -token or SVC_HTTP_TOKEN;',
    "CONSUL_HTTP_ADDR and CONSUL_HTTP_TOKEN work too; add -h for a command's options):",
    '',
    clientCommandList(),
    '',
    agentOptions(),
  ].join('\n');
}

export function agentHelp(): string {
  const intro = ['Usage: svc-agent agent [options]', '', '  Starts the agent and runs until interrupted.', ''];
  return [...intro, agentOptions()].join('\n');
}

function agentOptions(): string {
  const lines = ['Agent options:', ''];
  for (const flag of AGENT_FLAGS) {
    const key = flag.key === undefined ? undefined : findConfigKey(flag.key);
    const usage = flag.placeholder === undefined ? `-${flag.name}` : `-${flag.name}=<${flag.placeholder}>`;
    const def = key === undefined ? undefined : describeDefault(key);
    let doc = flag.doc ?? key?.doc ?? '';
    if (flag.key !== undefined) doc += ` Config key: ${flag.key}.`;
    if (def !== undefined) doc += ` Default: ${def}.`;
    lines.push(`  ${usage}`, `      ${doc}`, '');
  }
  return lines.join('\n');
}
