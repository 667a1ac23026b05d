// `acl set-agent-token TYPE TOKEN`: Consul's `consul acl set-agent-token`, same types, same lines.
// TOKEN may be `@file` or `-` (standard input), as Consul's LoadDataSource reads it. Each type is
// a PUT /v1/agent/token/<kind> (docs/decisions.md#agent-token-kinds).
import { agentError } from '../../core/errors.js';
import { SERVER_FLAGS, valueOf, type ClientCommand } from './command.js';

/** The CLI's types and the endpoint each sets (`master`: the name before Consul 1.11). */
const KIND_BY_TYPE: ReadonlyMap<string, string> = new Map([
  ['default', 'default'],
  ['agent', 'agent'],
  ['recovery', 'agent_recovery'],
  ['master', 'agent_recovery'],
  ['replication', 'replication'],
  ['config_file_service_registration', 'config_file_service_registration'],
]);

/** TYPE and TOKEN, or Consul's error for the arguments given. */
function typeAndToken(args: readonly string[]): [string, string] {
  const detail = (text: string) => agentError('CLI_AGENT_TOKEN_ARGUMENTS', { detail: text });
  const [type, token] = args;
  if (type === undefined) throw detail('Missing TYPE and TOKEN arguments');
  if (token === undefined)
    throw detail(KIND_BY_TYPE.has(type) && type !== 'master' ? 'Missing TOKEN argument' : 'MISSING TYPE argument');
  if (args.length > 2) throw detail(`Too many arguments: expected 2 got ${args.length}`);
  return [type, token];
}

export const agentTokenCommands: ClientCommand[] = [
  {
    name: 'acl set-agent-token',
    synopsis:
      "Sets one of the agent's ACL tokens: default, agent, recovery, replication or config_file_service_registration",
    argsUsage: 'TYPE TOKEN',
    // The arguments are checked here, in Consul's words.
    arity: [0, Number.MAX_SAFE_INTEGER],
    flags: { ...SERVER_FLAGS },
    async run({ api, args, io }) {
      const [type, raw] = typeAndToken(args);
      const token = await valueOf(io, raw);
      const kind = KIND_BY_TYPE.get(type);
      if (kind === undefined) throw agentError('CLI_AGENT_TOKEN_TYPE');
      const answer = await api.call('PUT', `/v1/agent/token/${kind}`, JSON.stringify({ Token: token }));
      if (answer.status < 200 || answer.status > 299)
        throw agentError('CLI_AGENT_TOKEN_FAILED', { type, status: answer.status, body: answer.text.trim() });
      io.out(`ACL token ${JSON.stringify(type)} set successfully\n`);
      return 0;
    },
  },
];
