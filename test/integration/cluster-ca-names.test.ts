// Leaves for service names that need percent-encoding (issue #40), asked of a client agent whose
// leaves a server signs through etcd, beside a server that signs its own: real agent processes
// (two servers and a client) on one etcd. Each answers 200 with the name's URI SAN in its one
// encoded form; before, the client refused the server's answer (500) after a serial was spent.
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { uriOf, type Leaf, type Roots } from './support/mtls.js';

interface Answer {
  readonly status: number;
  readonly text: string;
}

async function call(agent: AgentProcess, path: string): Promise<Answer> {
  const res = await fetch(`${agent.url}${path}`);
  return { status: res.status, text: await res.text() };
}

/** The agent's roots once its view holds the CA (a client started with the servers sees it a moment later). */
async function rootsOf(agent: AgentProcess): Promise<Roots> {
  for (;;) {
    const a = await call(agent, '/v1/agent/connect/ca/roots');
    if (a.status === 200) return JSON.parse(a.text) as Roots;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('leaves for names that need percent-encoding', () => {
  let etcd: EtcdCluster;
  const running: AgentProcess[] = [];
  let servers: AgentProcess[];
  let client: AgentProcess;

  const start = (name: string, server: boolean): Promise<AgentProcess> =>
    startAgent({
      config: {
        node_name: name,
        cluster: { etcd: { prefix: `/svc-ca-names-${process.pid}/` }, member_ttl: '2s' },
      },
      args: [...etcd.endpoints.flatMap((url) => ['-etcd', url]), ...(server ? ['-server'] : [])],
    }).then((agent) => {
      running.push(agent);
      return agent;
    });

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 1 });
    const [a, b, c] = await Promise.all([start('server-a', true), start('server-b', true), start('client-c', false)]);
    servers = [a, b];
    client = c;
  }, 60_000);

  afterAll(async () => {
    await Promise.all(running.map((agent) => agent.stop('SIGKILL')));
    await etcd?.stop();
  });

  it.each([
    ['a%20b', 'a b'],
    ['caf%C3%A9', 'café'],
    ['a%25b', 'a%b'],
  ])(
    'GET /v1/agent/connect/ca/leaf/%s answers 200 through the client and a server, the URI SAN naming %j',
    async (encoded, name) => {
      const { TrustDomain } = await rootsOf(client);
      const uri = `spiffe://${TrustDomain}/ns/default/dc/dc1/svc/${encoded}`;
      for (const agent of [client, servers[0]!]) {
        const answer = await call(agent, `/v1/agent/connect/ca/leaf/${encoded}`);
        expect({ status: answer.status, text: answer.status === 200 ? '' : answer.text }).toEqual({
          status: 200,
          text: '',
        });
        const leaf = JSON.parse(answer.text) as Leaf;
        expect(leaf.Service).toBe(name);
        expect(leaf.ServiceURI).toBe(uri);
        expect(uriOf(new X509Certificate(leaf.CertPEM))).toBe(uri);
      }
    },
    60_000,
  );
});
