// The client commands (`svc-agent kv get ...`): finds the command by its words, parses its flags,
// calls the agent and prints what Consul's CLI prints. Errors are one line and exit code 1.
import { readFile } from 'node:fs/promises';
import { isAgentError } from '../../core/errors.js';
import { usageError } from '../usage-error.js';
import { aclCommands } from './acl.js';
import { aclAuthMethodCommands } from './acl-auth-method.js';
import { loginCommands } from './login.js';
import { agentTokenCommands } from './agent-token.js';
import { agentCommands } from './agent.js';
import { ApiClient, targetFrom } from './api.js';
import { catalogCommands } from './catalog.js';
import { configEntryCommands } from './config-entries.js';
import type { ClientCommand, Io } from './command.js';
import { flagHelp, parseFlags, type FlagSpecs } from './flags.js';
import { intentionCommands } from './intention.js';
import { kvCommands } from './kv.js';
import { lockCommands } from './lock/command.js';
import { eventCommands } from './event.js';
import { maintCommands } from './maint.js';
import { membershipCommands } from './membership.js';
import { monitorCommands } from './monitor.js';
import { operatorCommands } from './operator.js';
import { watchCommands } from './watch.js';
import { proxyCommands } from './proxy.js';
import { servicesCommands } from './services.js';
import { snapshotCommands } from './snapshot.js';
import { nearestKey } from '../../config/did-you-mean.js';

export const CLIENT_COMMANDS: readonly ClientCommand[] = [
  ...kvCommands,
  ...agentCommands.filter((c) => c.name === 'members'),
  ...aclCommands,
  ...aclAuthMethodCommands,
  ...loginCommands,
  ...agentTokenCommands,
  ...intentionCommands,
  ...configEntryCommands,
  ...catalogCommands,
  ...servicesCommands,
  ...eventCommands,
  ...maintCommands,
  ...operatorCommands,
  ...watchCommands,
  ...lockCommands,
  ...membershipCommands,
  ...monitorCommands,
  ...agentCommands.filter((c) => c.name !== 'members'),
  ...proxyCommands,
  ...snapshotCommands,
];

/** The first words of every client command, for `svc-agent` to know one when it sees it. */
export const CLIENT_WORDS: ReadonlySet<string> = new Set(CLIENT_COMMANDS.map((c) => c.name.split(' ')[0] as string));

// Consul's HTTPFlags.ClientFlags; each also read from SVC_<NAME>, then CONSUL_<NAME> (connection.ts).
const CONNECTION_FLAGS: FlagSpecs = {
  'http-addr': {
    kind: 'string',
    doc: "The agent's address (host:port or a URL); default SVC_HTTP_ADDR, then CONSUL_HTTP_ADDR, then 127.0.0.1:8500. CONSUL_HTTP_SSL=true makes it https.",
  },
  token: { kind: 'string', doc: 'The ACL token; default SVC_HTTP_TOKEN, then CONSUL_HTTP_TOKEN.' },
  'token-file': {
    kind: 'string',
    doc: 'A file holding the ACL token, used instead of -token; also CONSUL_HTTP_TOKEN_FILE.',
  },
  'ca-file': { kind: 'string', doc: "A CA file (PEM) to verify the agent's certificate with; also CONSUL_CACERT." },
  'ca-path': {
    kind: 'string',
    doc: "A directory of CA certificates (PEM) to verify the agent's certificate with; also CONSUL_CAPATH.",
  },
  'client-cert': {
    kind: 'string',
    doc: 'A client certificate file, for an agent with verify_incoming; also CONSUL_CLIENT_CERT.',
  },
  'client-key': { kind: 'string', doc: "The client certificate's key file; also CONSUL_CLIENT_KEY." },
  'tls-server-name': {
    kind: 'string',
    doc: "The name the agent's certificate must hold (and the SNI host); also CONSUL_TLS_SERVER_NAME.",
  },
};

export const systemIo: Io = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
  stdin: async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString();
  },
  readFile: (path) => readFile(path, 'utf8'),
};

/**
 * What is said of words that name no command: the command words typed (`kv`, `acl token`), the
 * one probably meant, and the commands under them. The other words are never repeated: what
 * follows a mistyped command may be a token.
 */
function unknownCommand(argv: readonly string[]): string {
  const group: string[] = [];
  for (const word of argv) {
    const words = [...group, word];
    if (!CLIENT_COMMANDS.some((c) => words.every((w, i) => c.name.split(' ')[i] === w))) break;
    group.push(word);
  }
  const under = CLIENT_COMMANDS.filter((c) => group.every((w, i) => c.name.split(' ')[i] === w));
  const typed = argv[group.length];
  const next = new Set(under.map((c) => c.name.split(' ')[group.length]).filter((w) => w !== undefined));
  const near = typed === undefined || typed.startsWith('-') ? undefined : nearestKey(typed, next);
  const named = group.join(' ');
  const head =
    group.length === 0
      ? 'A command is required.'
      : typed === undefined || typed.startsWith('-')
        ? `${JSON.stringify(named)} needs a subcommand.`
        : `Unknown subcommand of ${JSON.stringify(named)}${near === undefined ? '' : ` (did you mean ${JSON.stringify(`${named} ${near}`)}?)`}.`;
  return `${head}\n\nCommands:\n${clientCommandList(under.length > 0 ? under : CLIENT_COMMANDS)}\n`;
}

/** The list printed for `help` and for an unknown command. */
export function clientCommandList(commands: readonly ClientCommand[] = CLIENT_COMMANDS): string {
  const width = Math.max(...commands.map((c) => c.name.length)) + 4;
  return commands.map((c) => `    ${c.name.padEnd(width)}${c.synopsis}`).join('\n');
}

export async function runClient(argv: readonly string[], env: NodeJS.ProcessEnv, io: Io = systemIo): Promise<number> {
  // The longest run of words that names a command: `acl policy list` before `acl`.
  let command: ClientCommand | undefined;
  let used = 0;
  for (const c of CLIENT_COMMANDS) {
    const words = c.name.split(' ');
    if (words.every((w, i) => argv[i] === w) && words.length > used) {
      command = c;
      used = words.length;
    }
  }
  if (command === undefined) {
    io.err(unknownCommand(argv));
    return 1;
  }
  const rest = argv.slice(used);
  const specs = { ...CONNECTION_FLAGS, ...command.flags };
  if (rest.some((a) => a === '-h' || a === '-help' || a === '--help')) {
    io.out(
      `Usage: svc-agent ${command.name} [options] ${command.argsUsage}\n\n  ${command.synopsis}.\n\nOptions:\n\n${flagHelp(specs)}\n`,
    );
    return 0;
  }
  try {
    const parsed = parseFlags(rest, specs);
    const [min, max] = command.arity;
    const given = parsed.args.length;
    if (given < min || given > max) {
      const err =
        given > max
          ? usageError('CLI_TOO_MANY_ARGUMENTS', { expected: max, got: given })
          : usageError('CLI_MISSING_ARGUMENT', { name: command.argsUsage.split(' ')[given] ?? command.argsUsage });
      io.err(`Usage: svc-agent ${command.name} [options] ${command.argsUsage}\n${err.message}\n`);
      return 1;
    }
    const v = parsed.values as Readonly<Record<string, string | undefined>>;
    const target = targetFrom(
      {
        httpAddr: v['http-addr'],
        token: v.token,
        tokenFile: v['token-file'],
        caFile: v['ca-file'],
        caPath: v['ca-path'],
        clientCert: v['client-cert'],
        clientKey: v['client-key'],
        tlsServerName: v['tls-server-name'],
        datacenter: v.datacenter,
      },
      env,
    );
    const api = new ApiClient(target, { stale: parsed.values.stale === true });
    return await command.run({ api, flags: parsed.values, args: parsed.args, io });
  } catch (err) {
    io.err(`${isAgentError(err) ? err.message : err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
