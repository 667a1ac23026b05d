// The agent's membership as an operator acts on it (docs/decisions.md#departed-members): PUT
// /v1/agent/leave (this agent leaves its cluster, answers, then stops), PUT /v1/agent/join/<address>
// (agents share a cluster through etcd, not by address: an address of a member is joined already,
// any other is refused) and PUT /v1/agent/force-leave/<node>[?prune] (a write of shared state: a
// client agent forwards it to a server, docs/decisions.md D25). ACLs as Consul's agent_endpoint.go:
// agent:write on this agent for leave and join, operator:write for force-leave.
import type { AgentInfo, MemberView } from '../../agent-info.js';
import { MEMBER_ALIVE, MEMBER_LEAVING } from '../../catalog/member-status.js';
import { agentError } from '../../core/errors.js';
import type { Logger } from '../../core/log.js';
import { EMPTY_OK } from '../reply.js';
import type { Route } from '../routes.js';

export interface MembershipDeps {
  readonly info: AgentInfo;
  /** Leaves gracefully; resolves once the cluster deregistered this agent (the reply follows). */
  readonly leave: () => Promise<void>;
  /** Called once the leave's reply is on its way: the agent then stops. */
  readonly leaveAnswered: () => void;
  /** The members as /v1/agent/members lists them: what a join address is compared with. */
  readonly members: () => readonly MemberView[];
  /** Whether the agent shares a cluster through etcd (a refused join says how to join one). */
  readonly clustered: boolean;
  readonly log: Logger;
}

export function agentMembershipRoutes({
  info,
  leave,
  leaveAnswered,
  members,
  clustered,
  log,
}: MembershipDeps): Route[] {
  const agentWrite = { resource: 'agent', access: 'write', name: () => info.nodeName } as const;
  return [
    {
      path: '/v1/agent/leave',
      methods: {
        PUT: {
          acl: agentWrite,
          handler: () =>
            leave().then(() => {
              leaveAnswered();
              return EMPTY_OK;
            }),
        },
      },
    },
    {
      path: '/v1/agent/join/',
      prefix: true,
      methods: {
        PUT: {
          acl: agentWrite,
          handler: (req) => {
            const address = req.rest;
            const host = hostOf(address);
            // Consul's join of a member it has already succeeds: here every member shares the one cluster.
            const live = (m: MemberView): boolean => m.status === MEMBER_ALIVE || m.status === MEMBER_LEAVING;
            if (members().some((m) => live(m) && m.address === host)) return EMPTY_OK;
            // Said once here, at info: the refusal is the caller's answer, not a fault of the agent's.
            log.info({ address }, 'join by address refused: agents share a cluster through etcd');
            throw agentError(clustered ? 'AGENT_JOIN_CLUSTER' : 'AGENT_JOIN_ALONE', { address });
          },
        },
      },
    },
  ];
}

export interface ForceLeaveDeps {
  /** Runs where the role keeps membership (a server, a lone agent); a client agent forwards the request. */
  readonly forceLeave: (node: string, prune: boolean) => Promise<void>;
}

/** The shared-state route group of force-leave (routes.ts passes it through the role). */
export function forceLeaveRoutes({ forceLeave }: ForceLeaveDeps): Route[] {
  return [
    {
      path: '/v1/agent/force-leave/',
      prefix: true,
      methods: {
        PUT: {
          acl: { resource: 'operator', access: 'write' },
          handler: (req) => forceLeave(req.rest, req.query.has('prune')).then(() => EMPTY_OK),
        },
      },
    },
  ];
}

/** The host of `host`, `host:port` or `[v6]:port` (a join names serf's address and port). */
function hostOf(address: string): string {
  const bracketed = /^\[([^\]]*)\](?::\d+)?$/.exec(address);
  if (bracketed !== null) return bracketed[1] as string;
  const colons = address.split(':').length - 1;
  return colons === 1 ? address.slice(0, address.indexOf(':')) : address;
}
