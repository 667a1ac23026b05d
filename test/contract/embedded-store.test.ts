// Runs the StateStore contract and the read path contract against the embedded store, in memory
// and with a data directory.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../src/core/log.js';
import { openEmbeddedStore } from '../../src/state/embedded/index.js';
import { describeReadPathContract } from './read-path.contract.js';
import { describeStateStoreContract } from './state-store.contract.js';

describeStateStoreContract('embedded, memory only', async () => {
  const store = await openEmbeddedStore({ log: silentLogger });
  return { store, cleanup: () => store.close() };
});

describeStateStoreContract('embedded, with a data directory', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-agent-contract-'));
  const store = await openEmbeddedStore({ dataDir, log: silentLogger });
  return {
    store,
    cleanup: async () => {
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
});

describeStateStoreContract('embedded, data directory with a snapshot every few records', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-agent-contract-'));
  // Rotation and snapshots run constantly under the contract's writes.
  const store = await openEmbeddedStore({ dataDir, log: silentLogger, snapshotEveryBytes: 256 });
  return {
    store,
    cleanup: async () => {
      await store.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
});

describeReadPathContract(
  'embedded, memory only',
  async () => {
    const store = await openEmbeddedStore({ log: silentLogger });
    return { store, cleanup: () => store.close() };
  },
  'kv',
);

describeReadPathContract(
  'embedded, with a data directory',
  async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'svc-agent-contract-'));
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    return {
      store,
      cleanup: async () => {
        await store.close();
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  },
  'kv',
);
