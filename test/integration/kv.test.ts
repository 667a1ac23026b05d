// /v1/kv against the real agent on the embedded store (the contract: support/kv-api-suite.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { kvApiSuite } from './support/kv-api-suite.js';

kvApiSuite(() => startAgent({ config: { limits: { kv_max_value_size: 1024 } } }));

describe('the index of what was never written', () => {
  let agent: AgentProcess;
  beforeAll(async () => {
    agent = await startAgent();
  });
  afterAll(() => agent.stop());

  // A cluster agent reports the etcd revision it read at instead (docs/decisions.md D15).
  it("reports the KV table's index for a key or prefix nothing was ever written under, as Consul does", async () => {
    const url = (path: string): string => `${agent.url}/v1/kv/${path}`;
    await fetch(url('table-index/latest'), { method: 'PUT', body: 'x' });
    const latest = Number((await fetch(url('table-index/latest'))).headers.get('x-svc-index'));
    expect(latest).toBeGreaterThan(1);
    for (const path of ['never/written', 'never/?recurse', 'never/?keys']) {
      const res = await fetch(url(path));
      expect(res.status).toBe(404);
      expect(Number(res.headers.get('x-svc-index'))).toBe(latest);
    }
  });
});
