// One agent instance of the scale harness, built by the agent's own entry (createAgent) in cluster
// mode as a client agent: its own etcd client, member lease, view watch and leadership probe, as a
// real agent process opens them. Its node registers `services` services, each with a TTL check
// (passing, 24 h: only the harness moves it), which anti-entropy forwards to a server as any
// client agent's would. Connect is off: each agent's signing pool starts a thread (src/agent/connect.ts),
// a per-process cost the harness's real agent processes carry, not one per instance.
import { createAgent, loadConfig, silentLogger, type Agent } from '../../src/index.js';
import { readServiceDefinition } from '../../src/local/definition.js';
import { checkId, type InstanceSpec } from './protocol.js';

export async function startInstance(spec: InstanceSpec, name: string): Promise<Agent> {
  const config = loadConfig({
    files: [],
    dev: true,
    flags: {
      node_name: name,
      server: false,
      connect: { enabled: false },
      cluster: {
        etcd: { endpoints: [...spec.endpoints], prefix: spec.prefix },
        member_ttl: spec.memberTtl,
        leader_probe_interval: spec.probeInterval,
      },
    },
  });
  const agent = await createAgent(config, { log: silentLogger });
  try {
    for (let i = 0; i < spec.services; i++) {
      await agent.local.registerService(
        readServiceDefinition({
          ID: `svc-${i}`,
          Name: `svc-${i}`,
          Port: 20_000 + i,
          Check: { CheckID: checkId(i), TTL: '24h', Status: 'passing' },
        }),
      );
    }
  } catch (err) {
    await agent.close();
    throw err;
  }
  return agent;
}
