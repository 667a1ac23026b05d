// A client agent process restarted from its data dir while etcd is down (a server agent signs its
// leaves): its first answer says there is no known leader and counts LastContact from when its view
// was last current (during the first run's stop), its leaf from before the restart is still
// answered (the same serial, from a 0600 file beside the view), and KnownLeader turns true once etcd
// is back. Every wait is for an event; the test timeout is the hang guard.
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LEAF_CACHE_FILE } from '../../src/connect/ca/leaf-cache-file.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';

interface Leaf {
  readonly SerialNumber: string;
}

let etcd: EtcdCluster;
let dataDir: string;
const running: AgentProcess[] = [];

beforeAll(async () => {
  etcd = await startEtcdCluster({ size: 1 });
  dataDir = await mkdtemp(join(tmpdir(), 'svc-restart-headers-'));
}, 60_000);

afterAll(async () => {
  await Promise.all(running.map((agent) => agent.stop('SIGKILL')));
  await etcd?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

const prefix = `/svc-restart-headers-${process.pid}/`;

function start(name: string, options: { server?: boolean; dataDir?: string } = {}): Promise<AgentProcess> {
  return startAgent({
    config: { node_name: name, cluster: { etcd: { prefix } } },
    args: [...etcd.endpoints.flatMap((url) => ['-etcd', url]), ...(options.server === true ? ['-server'] : [])],
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
  }).then((agent) => {
    running.push(agent);
    return agent;
  });
}

/** Polls until `done` accepts the answer; the test's timeout ends a wait that never comes. */
async function until(get: () => Promise<Response>, done: (res: Response) => boolean): Promise<Response> {
  for (;;) {
    const res = await get();
    if (done(res)) return res;
    await res.arrayBuffer();
    await new Promise((r) => setTimeout(r, 50));
  }
}

const leader = (res: Response): { known: string | null; lastContact: number } => ({
  known: res.headers.get('x-svc-knownleader'),
  lastContact: Number(res.headers.get('x-svc-lastcontact')),
});

describe('a client agent restarted from its view while etcd is down', () => {
  it('answers with no known leader and the view age, keeps its leaf, knows the leader once etcd is back', async () => {
    await start('server', { server: true });
    const first = await start('client', { dataDir });
    await until(
      () => fetch(`${first.url}/v1/agent/connect/ca/roots`),
      (r) => r.status === 200,
    );
    const held = (await (await fetch(`${first.url}/v1/agent/connect/ca/leaf/web`)).json()) as Leaf;
    const stopping = Date.now();
    expect(await first.stop('SIGTERM')).toBe(0);
    // The view was last current no later than this: the first run heard nothing from etcd after it stopped.
    const stoppedAt = Date.now();
    // Private keys on disk: readable by the agent's user only.
    expect((await stat(join(dataDir, LEAF_CACHE_FILE))).mode & 0o777).toBe(0o600);

    const member = etcd.members[0]!;
    await member.kill();
    const again = await start('client', { dataDir });
    const downFor = Date.now() - stoppedAt;
    const roots = await fetch(`${again.url}/v1/agent/connect/ca/roots`);
    expect(roots.status).toBe(200);
    const answered = leader(roots);
    expect(answered.known).toBe('false');
    expect(answered.lastContact).toBeGreaterThanOrEqual(downFor);
    // ...and no earlier than the stop began: etcd answered the first run until then.
    expect(answered.lastContact).toBeLessThanOrEqual(Date.now() - stopping);

    const leaf = await fetch(`${again.url}/v1/agent/connect/ca/leaf/web`);
    expect(leaf.status).toBe(200);
    expect(((await leaf.json()) as Leaf).SerialNumber).toBe(held.SerialNumber);

    await member.start();
    const back = await until(
      () => fetch(`${again.url}/v1/agent/connect/ca/roots`),
      (r) => r.headers.get('x-svc-knownleader') === 'true',
    );
    expect(leader(back)).toEqual({ known: 'true', lastContact: 0 });
  }, 90_000);
});
