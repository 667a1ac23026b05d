// etcd's auth tokens expire. A simple token (etcd's default kind) lapses --auth-token-ttl seconds
// (300 by default) after its last use on a member; a JWT at its ttl after it was issued, however
// much it is used. A watch stream keeps the token it was opened with, so an agent finds its token
// gone for its calls and for each watch it creates on its old stream. Here simple tokens live 1 s
// and JWTs 2 s, and the agents sit idle for 4 s before each round. In each round, every agent
// parks a blocking read (a new watch) that a write through another agent must wake with the
// written value, and then writes, reads and signs a leaf: every call counts once, none is retried.
// etcd's own count of Authenticate calls shows that the tokens were taken again, and no agent
// logs a warning.
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import {
  grpcHandled,
  newTally,
  stackLines,
  startClusterAgents,
  timed,
  workload,
  type ClusterAgents,
  type Tally,
} from './support.js';

const PASSWORD = 'expiry-root-pw';
const IDLE_MS = 4_000;
const ROUNDS = 3;
const WRITES_PER_ROUND = 20;
/** A parked read returns at this wait with its old index if no write wakes it (then it fails). */
const WAIT = '30s';

const WARN_OR_WORSE = new Set(['warn', 'error', 'fatal']);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A blocking read of `key` through `url` parked from the key's index now, and the write through
 * `writerUrl` that must wake it: one failure in `tally` unless the read returns the written value.
 */
async function wokenByWrite(url: string, writerUrl: string, key: string, tally: Tally): Promise<void> {
  const first = await fetch(`${url}/v1/kv/${key}`, { signal: AbortSignal.timeout(10_000) });
  await first.arrayBuffer();
  const index = first.headers.get('x-svc-index');
  const parkedUrl = `${url}/v1/kv/${key}?raw&index=${index}&wait=${WAIT}`;
  const parked = fetch(parkedUrl, { signal: AbortSignal.timeout(60_000) }).then(
    async (res) => `${res.status} ${await res.text()}, index ${index} -> ${res.headers.get('x-svc-index')}`,
    (err: Error) => err.message,
  );
  await timed(
    `${writerUrl}/v1/kv/${key}`,
    { method: 'PUT', body: key },
    (s, t) => s === 200 && t.trim() === 'true',
    tally,
  );
  tally.ops++;
  const answer = await parked;
  if (!answer.startsWith(`200 ${key}, `)) {
    tally.failures++;
    tally.samples.push(`blocking read of ${key}: ${answer}`);
  }
}

/** etcd's flag for JWTs signed with a new RSA key (its files in `dir`), valid for 2 s. */
async function jwtTokens(dir: string): Promise<string> {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const [pub, priv] = [join(dir, 'jwt.pub'), join(dir, 'jwt.key')];
  await writeFile(pub, publicKey.export({ type: 'spki', format: 'pem' }));
  await writeFile(priv, privateKey.export({ type: 'pkcs8', format: 'pem' }));
  return `--auth-token=jwt,pub-key=${pub},priv-key=${priv},sign-method=RS256,ttl=2s`;
}

const TOKEN_KINDS = [
  { kind: 'simple tokens with a 1 s TTL', args: async () => ['--auth-token-ttl=1'] },
  { kind: 'JWTs valid for 2 s', args: async (dir: string) => [await jwtTokens(dir)] },
];

describe.each(TOKEN_KINDS)('etcd auth tokens that expire: $kind', ({ args }) => {
  let etcd: EtcdCluster;
  let cluster: ClusterAgents;
  let keys: string;

  beforeAll(async () => {
    keys = await mkdtemp(join(tmpdir(), 'svc-agent-token-keys-'));
    etcd = await startEtcdCluster({ size: 3, args: await args(keys) });
    await etcd.enableAuth(PASSWORD);
    cluster = await startClusterAgents(etcd, {
      prefix: `/svc-token-ttl-${process.pid}/`,
      auth: { username: 'root', password: PASSWORD },
    });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
    await etcd?.stop();
    if (keys !== undefined) await rm(keys, { recursive: true, force: true });
  });

  it('new watches, writes, reads and leaves all work after each idle spell, with new tokens', async () => {
    const { agents } = cluster;
    const logFrom = agents.map((a) => a.logs.length);
    const authBefore = await grpcHandled(etcd, 'grpc_method="Authenticate"');
    const tallies: Tally[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      await sleep(IDLE_MS);
      const woken = newTally();
      await Promise.all(
        agents.map((a, i) => wokenByWrite(a.url, agents[(i + 1) % agents.length]!.url, `expiry/${round}/${i}`, woken)),
      );
      tallies.push(
        woken,
        ...(await Promise.all(agents.map((a, i) => workload(a, `r${round}-${i}`, WRITES_PER_ROUND)))),
      );
    }
    const authAfter = await grpcHandled(etcd, 'grpc_method="Authenticate"');

    const failures = tallies.reduce((n, t) => n + t.failures, 0);
    expect({ failures, samples: tallies.flatMap((t) => t.samples) }).toEqual({ failures: 0, samples: [] });
    // The tokens did lapse: the agents took new ones, at least once a round.
    expect(authAfter - authBefore).toBeGreaterThanOrEqual(ROUNDS);
    for (const [i, agent] of agents.entries()) {
      expect(stackLines(agent), cluster.names[i]).toEqual([]);
      // A token lapsing is routine: no warning, and the agent's membership lease is not lost.
      const warned = agent.logs.slice(logFrom[i]).filter((l) => WARN_OR_WORSE.has(String(l.level)));
      expect(
        warned.map((l) => String(l.msg)),
        cluster.names[i],
      ).toEqual([]);
    }
  }, 300_000);
});
