// The shared serial counter and a commit of unknown outcome (docs/decisions.md#write-outcome-unknown):
// whether it took the serials or not, the counter is read again and other serials are taken (a
// gap), so a leaf never fails with "the write may have been applied" and no serial is handed out twice.
import { describe, expect, it } from 'vitest';
import { CA_TABLE, SERIAL_KEY } from '../../../../src/connect/ca/model.js';
import { SharedSerials } from '../../../../src/connect/ca/serial-allocator.js';
import { agentError } from '../../../../src/core/errors.js';
import { silentLogger } from '../../../../src/core/log.js';
import { openEmbeddedStore } from '../../../../src/state/embedded/index.js';
import type { StateStore, WriteOp } from '../../../../src/state/types.js';

describe('SharedSerials after a commit of unknown outcome', () => {
  it('takes serials past whatever that commit may have taken', async () => {
    const inner = await openEmbeddedStore({ log: silentLogger });
    const commits: WriteOp[][] = [];
    // The first commit is applied and its answer lost, as when etcd hangs after applying it.
    const store: StateStore = Object.create(inner) as StateStore;
    store.commit = async (ops) => {
      commits.push([...ops]);
      const result = await inner.commit(ops);
      if (commits.length === 1) throw agentError('STATE_WRITE_OUTCOME_UNKNOWN');
      return result;
    };
    const serials = new SharedSerials(store);
    const taken = await serials.take();
    expect(taken.serial).toBe(2n);
    expect(commits).toHaveLength(2);
    expect(serials.conflicts).toBe(1);
    expect(inner.get<{ Next: string }>(CA_TABLE, SERIAL_KEY)?.value.Next).toBe('3');
    // Any other failure is the leaf's.
    store.commit = () => Promise.reject(agentError('STATE_NO_LEADER'));
    await expect(serials.take()).rejects.toMatchObject({ code: 'STATE_NO_LEADER' });
    await inner.close();
  });
});
