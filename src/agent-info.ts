// Who this agent is: node, datacenter, addresses and build, as /v1/agent/self, /v1/agent/members
// and /v1/status report it. The agent is a one-node cluster: its own server and leader.
import type { MemberRecord } from './cluster/members.js';
import type { AgentConfig } from './config/types.js';
import { CONSUL_API_VERSION, VERSION } from './version.js';

/** Consul's default server RPC and LAN gossip ports, reported where clients expect them. */
export const SERVER_PORT = 8300;
export const SERF_LAN_PORT = 8301;

export interface AgentInfo {
  readonly nodeName: string;
  readonly nodeId: string;
  readonly datacenter: string;
  /** The address other hosts are told about: advertise_addr as resolved (src/config/addresses.ts). */
  readonly advertiseAddr: string;
  readonly advertiseAddrWan: string;
  readonly version: string;
  readonly buildDate: string;
  readonly aclsEnabled: boolean;
}

export function agentInfo(config: AgentConfig, nodeId: string, startedAt: Date): AgentInfo {
  return Object.freeze({
    nodeName: config.nodeName,
    nodeId,
    datacenter: config.datacenter,
    advertiseAddr: config.advertiseAddr,
    advertiseAddrWan: config.advertiseAddrWan,
    version: VERSION,
    buildDate: startedAt.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    aclsEnabled: config.acl.enabled,
  });
}

/** What a member entry shows: this agent, or a cluster member read from etcd. */
export type MemberView = MemberRecord;

/** A lone agent as a member: its own server, at Consul's gossip port. */
export function selfMember(info: AgentInfo): MemberView {
  return {
    name: info.nodeName,
    id: info.nodeId,
    address: info.advertiseAddr,
    port: SERF_LAN_PORT,
    datacenter: info.datacenter,
    server: true,
    version: info.version,
    aclsEnabled: info.aclsEnabled,
  };
}

/**
 * Consul's build tag: the version with its metadata, the prerelease, then `:` and the revision, as
 * /v1/agent/self's Stats.build gives them (the Consul API version matched, `svc-agent-<version>`,
 * no prerelease, no revision). `consul members` shows what precedes the `:` as the Build column.
 */
export function buildTag(agentVersion: string): string {
  return `${CONSUL_API_VERSION}+svc-agent-${agentVersion}:`;
}

/**
 * Consul's member shape (docs/decisions.md#agent-endpoints); Status 1 is "alive"; Tags sorted.
 * Tags.role is Consul's: "consul" for a server, "node" for a client agent.
 */
export function memberJson(member: MemberView): Record<string, unknown> {
  return {
    Name: member.name,
    Addr: member.address,
    Port: member.port,
    Tags: {
      acls: member.aclsEnabled ? '1' : '0',
      build: buildTag(member.version),
      dc: member.datacenter,
      id: member.id,
      port: String(SERVER_PORT),
      raft_vsn: '3',
      role: member.server ? 'consul' : 'node',
      segment: '',
      vsn: '2',
      vsn_max: '3',
      vsn_min: '2',
    },
    Status: 1,
    ProtocolMin: 1,
    ProtocolMax: 5,
    ProtocolCur: 2,
    DelegateMin: 2,
    DelegateMax: 5,
    DelegateCur: 4,
  };
}
