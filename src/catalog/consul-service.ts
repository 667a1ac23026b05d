// The `consul` service Consul's leader registers on every server's node (agent/consul/leader_registrator_v1.go),
// so that clients find the servers through the catalog (`consul.service.consul`, `health/service/consul`).
// Its port here is the server agent's HTTP port: a svc-agent server serves no RPC port, and its API is
// what a caller that found it can reach (docs/decisions.md#departed-members). Anti-entropy keeps it
// (sync.ts), as Consul's agent leaves it to the leader.
import type { StoredService } from './model.js';

export const CONSUL_SERVICE_ID = 'consul';

/** The service for a server agent listening on `port`, of build `version` (Consul's Build.String()). */
export function consulService(port: number, version: string): StoredService {
  return {
    Kind: '',
    ID: CONSUL_SERVICE_ID,
    Service: CONSUL_SERVICE_ID,
    Tags: [],
    Address: '',
    // Consul's keys; serf's protocol numbers as /v1/agent/members reports them, no read replicas.
    Meta: {
      non_voter: 'false',
      raft_version: '3',
      read_replica: 'false',
      serf_protocol_current: '2',
      serf_protocol_max: '5',
      serf_protocol_min: '1',
      version,
    },
    Port: port,
    Weights: { Passing: 1, Warning: 1 },
    EnableTagOverride: false,
    Proxy: {},
    Connect: {},
  };
}
