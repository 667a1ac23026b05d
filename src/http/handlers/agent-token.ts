// PUT /v1/agent/token/<kind>: replaces one of the agent's own tokens until the next reload (for
// good with acl.enable_token_persistence), with Consul's checks in Consul's order (401 with ACLs
// off, agent:write on this node, the body, the kind). docs/decisions.md D21 and
// docs/decisions.md#agent-token-kinds say what each kind does here.
import type { AgentTokenKind, AgentTokens } from '../../acl/agent-tokens.js';
import { agentError } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import { jsonObjectDecoder } from '../body.js';
import { GoFields } from '../go-fields.js';
import { EMPTY_OK } from '../reply.js';
import type { Route } from '../routes.js';

export interface AgentTokenDeps {
  readonly tokens: AgentTokens;
  readonly nodeName: string;
  readonly log: Logger;
}

const PREFIX = 'Request decode failed';
const decodeAgentToken = jsonObjectDecoder({ prefix: PREFIX, typeName: 'api.AgentToken', fields: ['Token'] });

/** Consul 1.17's names for each kind, the legacy ones included (agent/agent_endpoint.go AgentToken). */
const KIND_BY_NAME: ReadonlyMap<string, AgentTokenKind> = new Map([
  ['default', 'default'],
  ['acl_token', 'default'],
  ['agent', 'agent'],
  ['acl_agent_token', 'agent'],
  ['agent_recovery', 'agent_recovery'],
  ['agent_master', 'agent_recovery'],
  ['acl_agent_master_token', 'agent_recovery'],
  ['replication', 'replication'],
  ['acl_replication_token', 'replication'],
  ['config_file_service_registration', 'config_file_service_registration'],
]);

export function agentTokenRoutes({ tokens, nodeName, log }: AgentTokenDeps): Route[] {
  return [
    {
      path: '/v1/agent/token/',
      prefix: true,
      aclApi: true,
      methods: {
        PUT: {
          acl: { resource: 'agent', access: 'write', name: () => nodeName },
          handler: async (req) => {
            const token = new GoFields(PREFIX, 'AgentToken').string(decodeAgentToken(req.body).Token, 'Token') ?? '';
            const name = req.rest;
            const kind = KIND_BY_NAME.get(name);
            if (kind === undefined) throw agentError('AGENT_TOKEN_UNKNOWN', { name });
            // Consul answers once the token file holds it (a failed write is a 500).
            await tokens.set(kind, token);
            log.info({ kind: name }, "Updated agent's ACL token");
            return EMPTY_OK;
          },
        },
      },
    },
  ];
}
