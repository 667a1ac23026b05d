// A leaf is asked for with its caller's token, so that a server can check service:write again
// (docs/decisions.md D24): the leaf manager keeps the latest caller's token per leaf and hands it to
// its source for the first issuance and for renewals; the leaf route passes the request's token.
import { describe, expect, it } from 'vitest';
import { LeafManager, type LeafSource } from '../../../../src/connect/ca/leaf-manager.js';
import { silentLogger } from '../../../../src/core/log.js';
import { HOUR, caFixture, seededRandom, settle } from './support.js';

describe('the token a leaf is asked for with', () => {
  it('is the latest caller’s, for the first issuance and for each renewal', async () => {
    const f = await caFixture();
    f.roots.get();
    const asked: (string | undefined)[] = [];
    const source: LeafSource = {
      signLeaf: (namespace, service, token) => {
        asked.push(token);
        return f.manager.signLeaf(namespace, service);
      },
    };
    const leaves = new LeafManager({
      source,
      roots: f.roots,
      clock: f.clock,
      random: seededRandom(),
      log: silentLogger,
      maxEntries: 10,
      idleTtlMs: 72 * HOUR,
      rootChangeSpreadMs: 0,
    });
    const first = await leaves.get('default', 'web', 'token-a');
    expect(leaves.get('default', 'web', 'token-b')).toMatchObject({ hit: true }); // no issuance, but now the latest caller
    const watch = leaves.waitFor('default', 'web', first.leaf.index, 'token-c');
    watch?.watchOnce(() => undefined);
    f.clock.advance(first.leaf.renewAt - f.clock.now());
    await settle();
    expect(asked).toEqual(['token-a', 'token-c']);
  });
});
