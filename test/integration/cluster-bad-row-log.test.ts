// A bad KV row read over and over (docs/cluster-security.md#bad-rows) is logged once, not once per
// read: each read answers 500 KV_VALUE_UNREADABLE, and the agent writes one ERROR line for the run
// of them (src/core/log-gate.ts), the row's own warning once per bad revision, and the count of the
// reads once they stop.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectEtcd, type EtcdConnection } from '../../src/state/etcd/index.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';

const PREFIX = `/svc-bad-log-${process.pid}/`;
const READS = 40;

describe('a bad KV row read again and again', () => {
  let etcd: EtcdCluster;
  let raw: EtcdConnection;
  let agent: AgentProcess;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 1 });
    raw = connectEtcd({ endpoints: etcd.endpoints });
    agent = await startAgent({
      config: { node_name: 'server-1', cluster: { etcd: { prefix: PREFIX } } },
      args: [...etcd.endpoints.flatMap((url) => ['-etcd', url]), '-server'],
    });
  }, 60_000);

  afterAll(async () => {
    await agent?.stop('SIGKILL');
    raw?.close();
    await etcd?.stop();
  });

  it('logs one line for the reads and their count once they stop, not one per read', async () => {
    expect((await fetch(`${agent.url}/v1/kv/app/good`, { method: 'PUT', body: 'fine' })).status).toBe(200);
    const from = agent.logs.length;
    for (const [key, value] of [
      ['app/junk', 'not json'],
      ['app/null', 'null'],
    ] as const) {
      const put = { op: 'put' as const, key: Buffer.from(`${PREFIX}bulk/kv/${key}`), value: Buffer.from(value) };
      await raw.txn({ compares: [], success: [put], failure: [] }, 5_000);
    }
    for (let i = 0; i < READS; i++) {
      const key = i % 2 === 0 ? 'app/junk' : 'app/null';
      const res = await fetch(`${agent.url}/v1/kv/${key}${i % 4 < 2 ? '' : '?raw'}`);
      expect(res.status).toBe(500);
      expect(await res.text()).toContain(`value of key "${key}" is unreadable`);
    }
    // The good key still answers between them (a success does not end the run of failed reads).
    expect((await fetch(`${agent.url}/v1/kv/app/good?raw`)).status).toBe(200);

    // The count once the reads stopped; or, were each read logged, the last read's line.
    let perRead = 0;
    const counted = await agent.waitForLog(
      (l) =>
        String(l.msg).startsWith('request failed (repeated') || (l.msg === 'request failed' && ++perRead === READS),
      from,
    );
    const loud = agent.logs.slice(from).filter((l) => l.level === 'warn' || l.level === 'error');
    const failedReads = loud.filter((l) => l.msg === 'request failed');
    expect(failedReads).toHaveLength(1);
    expect(failedReads[0]).toMatchObject({ level: 'error', err: { code: 'KV_VALUE_UNREADABLE' } });
    expect(counted).toMatchObject({
      level: 'info',
      msg: expect.stringMatching(/^request failed \(repeated 39 times over /),
    });
    // Besides it, at most each bad row's own warning, once (per bad revision, not per read).
    expect(loud.length, JSON.stringify(loud)).toBeLessThanOrEqual(3);
  }, 90_000);
});
