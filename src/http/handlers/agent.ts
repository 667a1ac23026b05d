// /v1/agent/self, /v1/agent/members and /v1/status/{leader,peers}: who this agent is.
import { memberJson, selfMember, SERVER_PORT, type AgentInfo, type MemberView } from '../../agent-info.js';
import type { AgentConfig } from '../../config/types.js';
import { CONSUL_API_VERSION, VERSION } from '../../version.js';
import { agentError } from '../../core/errors.js';
import type { Metrics } from '../../core/metrics.js';
import type { PrometheusMetrics } from '../../core/prometheus.js';
import type { BrandHeaders } from '../brand.js';
import { EMPTY_OK, jsonReply, type Header } from '../reply.js';
import { requestToken } from '../token.js';
import type { Route } from '../routes.js';

export interface AgentDeps {
  readonly metrics: Metrics;
  /** Serves ?format=prometheus; undefined when telemetry.prometheus_retention_time is 0. */
  readonly prometheus?: PrometheusMetrics | undefined;
  readonly info: AgentInfo;
  readonly brand: BrandHeaders;
  /** The config in force (a reload replaces it). */
  readonly config: () => AgentConfig;
  /** Re-reads the config files and applies what can change (PUT /v1/agent/reload); throws the reason it could not. */
  readonly reload: () => Promise<void>;
  readonly stats: () => Record<string, Record<string, string>>;
  /** The state store's index (a lone agent's raft LastIndex). */
  readonly stateIndex: () => number;
  /** Present in cluster mode: members, leader and peers come from etcd instead of this agent alone. */
  readonly cluster?: ClusterView | undefined;
}

/** What the cluster tells these routes; the agent alone is its own cluster without it. */
export interface ClusterView {
  members(): readonly MemberView[];
  /** The etcd leader's client address (`host:port`), "" when none is known. */
  leader(): Promise<string>;
  peers(): Promise<string[]>;
  /** etcd's members, the leader marked (/v1/operator/raft/configuration). */
  raftServers(): Promise<readonly RaftServerView[]>;
}

export interface RaftServerView {
  readonly id: string;
  readonly node: string;
  readonly address: string;
  readonly leader: boolean;
}

export function agentRoutes({
  info,
  brand,
  config: running,
  reload,
  stats,
  metrics,
  prometheus,
  cluster,
  stateIndex,
}: AgentDeps): Route[] {
  const leader = `${info.advertiseAddr}:${SERVER_PORT}`;
  const config = running();
  const self = { ...selfMember(info), server: config.server };
  const members = (): readonly MemberView[] => cluster?.members() ?? [self];
  let debugConfig = { of: config, json: sanitize(config) as Record<string, unknown> };
  const currentDebugConfig = (): Record<string, unknown> => {
    const now = running();
    if (debugConfig.of !== now) debugConfig = { of: now, json: sanitize(now) as Record<string, unknown> };
    return debugConfig.json;
  };
  // Config.Version is the Consul API version matched, which clients gate features on; the agent's
  // own version is in Stats.build.version_metadata. No xDS section: the agent serves no xDS port.
  const selfJson = (leaderAddr: string): Record<string, unknown> => ({
    Config: {
      Datacenter: info.datacenter,
      PrimaryDatacenter: info.datacenter,
      NodeName: info.nodeName,
      NodeID: info.nodeId,
      Revision: '',
      Server: config.server,
      Version: CONSUL_API_VERSION,
      BuildDate: info.buildDate,
    },
    DebugConfig: currentDebugConfig(),
    Coord: { Vec: [0, 0, 0, 0, 0, 0, 0, 0], Error: 1.5, Adjustment: 0, Height: 0.00001 },
    Member: memberJson(self),
    Stats: {
      ...stats(),
      build: { prerelease: '', revision: '', version: CONSUL_API_VERSION, version_metadata: `svc-agent-${VERSION}` },
      consul: {
        acl: info.aclsEnabled ? 'enabled' : 'disabled',
        bootstrap: 'false',
        known_datacenters: '1',
        // Alone, the agent is its own leader; in a cluster etcd's raft leads, never an agent.
        leader: String(cluster === undefined),
        leader_addr: leaderAddr,
        server: String(config.server),
      },
    },
    Meta: { 'consul-network-segment': '', 'consul-version': CONSUL_API_VERSION },
  });

  return [
    {
      path: '/v1/agent/reload',
      methods: {
        PUT: {
          acl: { resource: 'agent', access: 'write', name: () => info.nodeName },
          handler: () => reload().then(() => EMPTY_OK),
        },
      },
    },
    {
      path: '/v1/agent/self',
      methods: {
        GET: {
          acl: { resource: 'agent', access: 'read', name: () => info.nodeName },
          handler: (req) =>
            cluster === undefined
              ? jsonReply(selfJson(leader), req.pretty)
              : cluster.leader().then((l) => jsonReply(selfJson(l), req.pretty)),
        },
      },
    },
    {
      path: '/v1/agent/metrics',
      methods: {
        GET: {
          acl: { resource: 'agent', access: 'read', name: () => info.nodeName },
          handler: (req) => {
            if (req.query.get('format') !== 'prometheus') return jsonReply(metrics.snapshot(), req.pretty);
            // Consul's answer when its Prometheus sink is off.
            if (prometheus === undefined) throw agentError('METRICS_PROMETHEUS_DISABLED');
            return prometheus.text().then((body) => ({ status: 200, body, contentType: prometheus.contentType }));
          },
        },
      },
    },
    {
      path: '/v1/agent/members',
      methods: {
        GET: {
          acl: 'resolved',
          handler: (req, identity) => {
            const segment = req.query.get('segment');
            const wan = req.query.get('wan');
            if (wan && segment && segment !== '_all') throw agentError('MEMBERS_SEGMENT');
            // Filtered by node:read; an agent-local endpoint says so only to a caller that gave a token.
            const all = members();
            const visible = all.filter((m) => identity.authorizer.allowed('node', 'read', m.name));
            const filtered = visible.length < all.length && requestToken(req) !== undefined;
            const headers: Header[] = filtered ? [[brand.resultsFilteredByAcls, 'true']] : [];
            // WAN members are named node.dc, as Consul's WAN pool names its servers.
            const shown = wan
              ? visible.filter((m) => m.server).map((m) => ({ ...memberJson(m), Name: `${m.name}.${m.datacenter}` }))
              : visible.map(memberJson);
            return jsonReply(shown, req.pretty, headers);
          },
        },
      },
    },
    {
      path: '/v1/status/leader',
      methods: {
        GET: {
          acl: 'none',
          handler: (req) =>
            cluster === undefined
              ? jsonReply(leader, req.pretty)
              : cluster.leader().then((l) => jsonReply(l, req.pretty)),
        },
      },
    },
    {
      path: '/v1/operator/raft/configuration',
      methods: {
        GET: {
          acl: { resource: 'operator', access: 'read' },
          handler: async (req) => {
            // A lone agent is a cluster of one: its own leader. In a cluster, etcd's members are the voters.
            const servers =
              cluster === undefined
                ? [{ id: info.nodeId, node: info.nodeName, address: leader, leader: true, lastIndex: stateIndex() }]
                : await cluster.raftServers();
            const body = {
              Servers: servers.map((s) => ({
                ID: s.id,
                Node: s.node,
                Address: s.address,
                Leader: s.leader,
                ProtocolVersion: '3',
                Voter: true,
                // etcd does not say how far each member has applied: left out there, not guessed.
                ...('lastIndex' in s ? { LastIndex: s.lastIndex } : {}),
              })),
              Index: 0,
            };
            return jsonReply(body, req.pretty);
          },
        },
      },
    },
    {
      path: '/v1/status/peers',
      methods: {
        GET: {
          acl: 'none',
          handler: (req) =>
            cluster === undefined
              ? jsonReply([leader], req.pretty)
              : cluster.peers().then((p) => jsonReply(p, req.pretty)),
        },
      },
    },
  ];
}

/** Fields that hold secrets: every ACL token, and key material. */
const SECRET_FIELD = /^(?:privateKey|.*secret.*|.*token)$/i;

/** The runtime config with Go-style field names; every secret field reads "hidden". */
function sanitize(value: unknown, secret = false): unknown {
  if (secret && (typeof value === 'string' || value === undefined)) return 'hidden';
  if (value === undefined) return null;
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => sanitize(v, secret));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value))
    out[pascal(key)] = sanitize(v, secret || key === 'tokens' || SECRET_FIELD.test(key));
  return out;
}

function pascal(key: string): string {
  return key.charAt(0).toUpperCase() + key.slice(1);
}
