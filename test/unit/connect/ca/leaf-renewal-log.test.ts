// Renewals of watched leaves that fail while nothing can be signed (etcd or every server away) are
// logged once per cause, not once per leaf and retry, and counted when a leaf is signed again.
import { describe, expect, it } from 'vitest';
import { LeafManager } from '../../../../src/connect/ca/leaf-manager.js';
import { agentError } from '../../../../src/core/errors.js';
import { recordingLogger } from '../../../support/recording-logger.js';
import { HOUR, caFixture, seededRandom, settle } from './support.js';

describe('LeafManager renewal failures', () => {
  it('logs the first failed renewal of a cause, counts the rest, and logs the count once a leaf is signed', async () => {
    const f = await caFixture();
    f.roots.get();
    const log = recordingLogger();
    let failing = false;
    const leaves = new LeafManager({
      source: {
        signLeaf: (ns, svc) =>
          failing
            ? Promise.reject(agentError('CA_NO_SERVER', { detail: 'No cluster leader' }))
            : f.manager.signLeaf(ns, svc),
      },
      roots: f.roots,
      clock: f.clock,
      random: seededRandom(),
      log,
      maxEntries: 100,
      idleTtlMs: 72 * HOUR,
      rootChangeSpreadMs: 0,
    });
    const services = ['web', 'api', 'db', 'cache'];
    let woken = 0;
    let renewAt = Infinity;
    for (const service of services) {
      const first = await leaves.get('default', service);
      renewAt = Math.min(renewAt, first.leaf.renewAt);
      leaves.waitFor('default', service, first.leaf.index)!.watchOnce(() => woken++);
    }
    failing = true;
    // Past every renewal time, then through a few retries (each within 30 s) of each.
    f.clock.advance(renewAt - f.clock.now());
    for (let i = 0; i < 20; i++) {
      f.clock.advance(15 * 60_000);
      await settle();
    }
    const loud = (): string[] => log.entries.filter((e) => e.level !== 'debug').map((e) => `${e.level} ${e.msg}`);
    expect(loud()).toEqual(['warn leaf renewal failed; retrying']);
    const repeats = log.entries.filter((e) => e.level === 'debug' && e.msg === 'leaf renewal failed; retrying').length;
    expect(repeats).toBeGreaterThanOrEqual(services.length);

    failing = false;
    f.clock.advance(30_000);
    await settle();
    expect(woken).toBeGreaterThan(0);
    expect(loud()).toEqual([
      'warn leaf renewal failed; retrying',
      expect.stringMatching(new RegExp(`^info leaf renewal failed; retrying \\(repeated ${repeats} times over `)),
    ]);
    leaves.close();
  });
});
