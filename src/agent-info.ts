// Who this agent is: node, datacenter, addresses and build, as /v1/agent/self, /v1/agent/members
// and /v1/status report it. The agent is a one-node cluster: its own server and leader.
import { MEMBER_ALIVE, type MemberStatus } from './catalog/member-status.js';
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

/** What a member entry shows: this agent, or a cluster member read from etcd or departed (src/catalog/member-status.ts). */
export interface MemberView extends MemberRecord {
  /** Serf's status: 1 alive, 2 leaving, 3 left, 4 failed. */
  readonly status: MemberStatus;
}

/** This agent's member record: a lone agent's own server, at Consul's gossip port (a cluster agent puts its own). */
export function selfRecord(info: AgentInfo): MemberRecord {
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

/** A lone agent as a member: alive. */
export function selfMember(info: AgentInfo): MemberView {
  return { ...selfRecord(info), status: MEMBER_ALIVE };
}

/**
 * Consul's build tag: the version with its metadata, the prerelease, then `:` and the revision, as
 * /v1/agent/self's Stats.build gives them (the Consul API version matched, `svc-agent-<version>`,
 * no prerelease, no revision). `consul members` shows what precedes the `:` as the Build column.
 */
export function buildTag(agentVersion: string): string {
  return `${CONSUL_API_VERSION}+svc-agent-${agentVersion}:`;
}

/** The build's version alone (what precedes the `:`), as Consul's metadata.Build gives it to the `consul` service. */
export function buildVersion(agentVersion: string): string {
  return buildTag(agentVersion).split(':')[0] as string;
}

/**
 * Consul's member shape (docs/decisions.md#agent-endpoints); Status is serf's (1 alive, 2 leaving,
 * 3 left, 4 failed: docs/decisions.md#departed-members); Tags sorted. Tags.role is Consul's:
 * "consul" for a server, "node" for a client agent.
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
    Status: member.status,
    ProtocolMin: 1,
    ProtocolMax: 5,
    ProtocolCur: 2,
    DelegateMin: 2,
    DelegateMax: 5,
    DelegateCur: 4,
  };
}
