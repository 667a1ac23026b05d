// The client commands (`svc-agent kv get ...`): finds the command by its words, parses its flags,
// calls the agent and prints what Consul's CLI prints. Errors are one line and exit code 1.
import { readFile } from 'node:fs/promises';
import { isAgentError } from '../../core/errors.js';
import { aclCommands } from './acl.js';
import { agentCommands } from './agent.js';
import { ApiClient, targetFrom } from './api.js';
import type { ClientCommand, Io } from './command.js';
import { flagHelp, parseFlags, type FlagSpecs } from './flags.js';
import { intentionCommands } from './intention.js';
import { kvCommands } from './kv.js';

export const CLIENT_COMMANDS: readonly ClientCommand[] = [...kvCommands, ...agentCommands.filter((c) => c.name === 'members'), ...aclCommands, ...intentionCommands, ...agentCommands.filter((c) => c.name !== 'members')];

/** The first words of every client command, for `svc-agent` to know one when it sees it. */
export const CLIENT_WORDS: ReadonlySet<string> = new Set(CLIENT_COMMANDS.map((c) => c.name.split(' ')[0] as string));

const CONNECTION_FLAGS: FlagSpecs = {
  'http-addr': { kind: 'string', doc: 'The agent\'s address (host:port or a URL); default SVC_HTTP_ADDR, then CONSUL_HTTP_ADDR, then 127.0.0.1:8500.' },
  token: { kind: 'string', doc: 'The ACL token; default SVC_HTTP_TOKEN, then CONSUL_HTTP_TOKEN.' },
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
    const prefix = argv.filter((a) => !a.startsWith('-')).join(' ');
    const near = CLIENT_COMMANDS.filter((c) => c.name.startsWith(`${argv[0] ?? ''} `) || c.name === argv[0]);
    io.err(`${prefix === '' ? 'A command is required.' : `Unknown command: ${JSON.stringify(prefix)}`}\n\nCommands:\n${clientCommandList(near.length > 0 ? near : CLIENT_COMMANDS)}\n`);
    return 1;
  }
  const rest = argv.slice(used);
  const specs = { ...CONNECTION_FLAGS, ...command.flags };
  if (rest.some((a) => a === '-h' || a === '-help' || a === '--help')) {
    io.out(`Usage: svc-agent ${command.name} [options] ${command.argsUsage}\n\n  ${command.synopsis}.\n\nOptions:\n\n${flagHelp(specs)}\n`);
    return 0;
  }
  try {
    const parsed = parseFlags(rest, specs);
    const [min, max] = command.arity;
    if (parsed.args.length < min || parsed.args.length > max) {
      io.err(`Usage: svc-agent ${command.name} [options] ${command.argsUsage}\n${parsed.args.length < min ? 'Missing arguments' : `Too many arguments (expected ${max}, got ${parsed.args.length})`}\n`);
      return 1;
    }
    const target = targetFrom({ httpAddr: parsed.values['http-addr'] as string | undefined, token: parsed.values.token as string | undefined }, env);
    return await command.run({ api: new ApiClient(target), flags: parsed.values, args: parsed.args, io });
  } catch (err) {
    io.err(`${isAgentError(err) ? err.message : err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}
