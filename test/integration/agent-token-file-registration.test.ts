// acl.tokens.config_file_service_registration on a cluster's client agent (docs/decisions.md#agent-token-kinds):
// the client's sync of a service its config file defines carries that token to the server, which
// checks it; a service registered through the agent's API is synced with the agent token. Here the
// agent token may write the client's node and no service: the file's service reaches the catalog,
// the API's is refused by the server (403 in the client's log) and stays out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const PREFIX = `/svc-file-token-${process.pid}/`;
const MANAGEMENT = '3c4d5e6f-7081-4293-a4b5-c6d7e8f90a1b';
const AGENT_SECRET = '4d5e6f70-8192-43a4-b5c6-d7e8f90a1b2c';
const FILE_SECRET = '5e6f7081-92a3-44b5-86d7-e8f90a1b2c3d';
const CLIENT = 'file-client';

let etcd: EtcdCluster;
const started: AgentProcess[] = [];

async function call(agent: AgentProcess, method: string, path: string, body?: unknown): Promise<[number, string]> {
  const res = await fetch(`${agent.url}${path}`, {
    method,
    headers: { 'X-Svc-Token': MANAGEMENT },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return [res.status, await res.text()];
}

beforeAll(async () => {
  etcd = await startEtcdCluster({ size: 1 });
}, 60_000);

afterAll(async () => {
  await Promise.all(started.map((agent) => agent.stop('SIGKILL')));
  await etcd?.stop();
});

describe('the config-file registration token on a client agent', () => {
  let server: AgentProcess;
  let client: AgentProcess;
  const acl = (tokens: Record<string, string>) => ({ enabled: true, default_policy: 'deny', tokens });
  const etcdArgs = () => etcd.endpoints.flatMap((url) => ['-etcd', url]);

  beforeAll(async () => {
    server = await startAgent({
      config: {
        node_name: 'file-server',
        cluster: { etcd: { prefix: PREFIX } },
        acl: acl({ initial_management: MANAGEMENT }),
      },
      args: [...etcdArgs(), '-server'],
    });
    started.push(server);
    const policy = async (name: string, rules: string): Promise<string> => {
      const [status, body] = await call(server, 'PUT', '/v1/acl/policy', { Name: name, Rules: rules });
      expect([status, body]).toEqual([200, expect.any(String)]);
      return (JSON.parse(body) as { ID: string }).ID;
    };
    const nodeOnly = await policy('client-node', `node "${CLIENT}" { policy = "write" }`);
    const web = await policy(
      'web-service',
      `service "web" { policy = "write" }\nnode "${CLIENT}" { policy = "write" }`,
    );
    for (const [secret, id] of [
      [AGENT_SECRET, nodeOnly],
      [FILE_SECRET, web],
    ] as const)
      expect((await call(server, 'PUT', '/v1/acl/token', { SecretID: secret, Policies: [{ ID: id }] }))[0]).toBe(200);
    client = await startAgent({
      config: {
        node_name: CLIENT,
        cluster: { etcd: { prefix: PREFIX } },
        acl: acl({ agent: AGENT_SECRET, config_file_service_registration: FILE_SECRET }),
        services: [{ name: 'web', id: 'web-file', port: 8080 }],
      },
      args: etcdArgs(),
    });
    started.push(client);
  }, 120_000);

  it("syncs the file's service with its token, and the API's with the agent token, which the server refuses", async () => {
    // The file's service reaches the catalog through the server.
    for (;;) {
      const [, body] = await call(server, 'GET', '/v1/catalog/service/web');
      const nodes = (JSON.parse(body) as { Node: string; ServiceID: string }[]).map((e) => [e.Node, e.ServiceID]);
      if (nodes.length > 0) {
        expect(nodes).toEqual([[CLIENT, 'web-file']]);
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    const from = client.logs.length;
    expect(await call(client, 'PUT', '/v1/agent/service/register', { Name: 'api-svc', Port: 9090 })).toEqual([200, '']);
    const refused = await client.waitForLog(
      (l) => l.msg === 'the agent could not sync its services and checks to the catalog; retrying',
      from,
    );
    expect(JSON.stringify(refused)).toContain('403');
    expect(JSON.stringify(refused)).toContain('lacks permission \'service:write\' on \\"api-svc\\"');
    expect(JSON.parse((await call(server, 'GET', '/v1/catalog/service/api-svc'))[1])).toEqual([]);
    // The file's service is still there: the refusal held back nothing else.
    expect(JSON.parse((await call(server, 'GET', '/v1/catalog/service/web'))[1])).toHaveLength(1);
  });
});
