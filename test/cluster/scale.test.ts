// The scale harness (bench/scale/, issue 46) at N = 50 on one etcd: 2 server agent processes, 1
// client agent process and 47 agent instances built by createAgent in 4 host processes, each node
// with 10 services and TTL checks registered through anti-entropy. It asserts the invariants, not
// speeds: every node reaches every view; an intention write reaches all N; a killed host's
// instances turn critical in every other view within their member lease TTL plus a margin; and once
// every agent has left, etcd holds as many leases and watchers as before any started.
// Needs the build (dist/src/cli/main.js and dist/bench/scale/host.js): npm test builds first.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScaleHarness } from '../../bench/scale/harness.js';
import { until } from './support.js';

const N = 50;
const MEMBER_TTL_S = 3;
/**
 * Past the lease TTL: etcd's expiry sweep (every 500 ms), the servers' reconciler writing the
 * critical check, and its watch event reaching 50 views, on a host that may be shared. A margin,
 * not a speed: this bounds what the issue requires, "within its lease TTL plus a margin".
 */
const CRASH_MARGIN_S = 20;
/**
 * Bounds on waits that end by events; a run that needs longer has failed. Generous: on this shared
 * 2-core machine at load 15-20 the 50 nodes took 77 s to reach every view (docs/scale.md).
 */
const VIEW_LIMIT_MS = 240_000;
const CHANGE_LIMIT_MS = 30_000;

describe(`the scale harness at N = ${N}`, () => {
  let harness: ScaleHarness;

  beforeAll(async () => {
    harness = await ScaleHarness.start({ agents: N, hosts: 4, memberTtl: `${MEMBER_TTL_S}s` });
  }, 180_000);
  afterAll(async () => {
    await harness?.stop();
  }, 60_000);

  it('puts every instance node, with its 10 services, in every view', async () => {
    const joined = await harness.awaitAllNodes(VIEW_LIMIT_MS);
    expect(harness.names).toHaveLength(N);
    expect(joined.lags).toHaveLength(N);
    expect(joined.lags.filter((l) => l === undefined)).toEqual([]);
  }, 300_000);

  it('brings an intention write to all N views', async () => {
    const written = await harness.intentionWrite('scale-web', 'scale-db', 'deny', CHANGE_LIMIT_MS);
    expect(written.lags).toHaveLength(N);
    expect(written.lags.filter((l) => l === undefined)).toEqual([]);
  }, 60_000);

  it("turns a killed host's instances critical in every other view within the lease TTL plus a margin", async () => {
    const killed = await harness.killHost(harness.hostCount - 1, (MEMBER_TTL_S + CRASH_MARGIN_S) * 1000);
    expect(killed.nodes.length).toBeGreaterThan(0);
    expect(killed.lags).toHaveLength(N - killed.nodes.length);
    expect(killed.lags.filter((l) => l === undefined)).toEqual([]);
  }, 60_000);

  it('leaves no lease and no watcher behind once every agent has left', async () => {
    await harness.leaveAll();
    // A crashed member's lease lapses within its TTL, and a forwarded request's lease (a few
    // seconds) within its own if its revoke was cut short by the close: etcd says when, not a push.
    const leases = await until(
      () => harness.etcd.leases(),
      (ids) => ids.length <= harness.baseline.leases,
      250,
    );
    const watchers = await until(
      async () => (await harness.etcdSample()).watchers,
      (n) => n <= harness.baseline.watchers,
      250,
    );
    expect(leases).toHaveLength(harness.baseline.leases);
    expect(watchers).toBe(harness.baseline.watchers);
  }, 60_000);
});
