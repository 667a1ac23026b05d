// Anti-entropy against the real catalog on an embedded store, on a fake clock: the first full sync,
// partial syncs that leave the node's other entries alone, an output-only change held for
// check_update_interval, and drift repaired by the next full sync (docs/decisions.md D26); a sync that
// keeps failing is warned of once, and not at all when its cause was logged where it arose.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { allowAllAuthorizer } from '../../../src/acl/authorizer.js';
import type { Identity } from '../../../src/acl/identity.js';
import { Catalog } from '../../../src/catalog/catalog.js';
import { CATALOG_CHECKS, CATALOG_SERVICES, memberKey, type StoredCheck } from '../../../src/catalog/model.js';
import { FakeClock } from '../../../src/core/clock.js';
import { agentError } from '../../../src/core/errors.js';
import { silentLogger } from '../../../src/core/log.js';
import { AntiEntropy, FULL_SYNC_INTERVAL_MS } from '../../../src/local/anti-entropy.js';
import { readCheckDefinition, readServiceDefinition } from '../../../src/local/definition.js';
import { LocalState } from '../../../src/local/local-state.js';
import { openEmbeddedStore, type EmbeddedStore } from '../../../src/state/embedded/index.js';

const NODE = 'n1';
const INTERVAL = 5_000;
const everyone: Identity = { authorizer: allowAllAuthorizer, accessorId: '', anonymous: true, namespace: 'default' };

describe('AntiEntropy', () => {
  let store: EmbeddedStore;
  /** Reads of a node's rows by the catalog's writes (a full sync's compare lists them). */
  let lists = 0;
  let catalog: Catalog;
  let clock: FakeClock;
  let state: LocalState;
  let ae: AntiEntropy;

  beforeEach(async () => {
    store = await openEmbeddedStore({ log: silentLogger });
    lists = 0;
    const counted = new Proxy(store, {
      get: (target, key) =>
        key === 'list'
          ? (...args: Parameters<EmbeddedStore['list']>) => (lists++, target.list(...args))
          : (Reflect.get(target, key) as unknown),
    });
    catalog = new Catalog(counted, 'dc1');
    clock = new FakeClock(1_000);
    state = new LocalState(NODE);
    state.addService(
      readServiceDefinition({ ID: 'web-1', Name: 'web', Port: 80, Check: { CheckID: 'ttl', TTL: '1m' } }),
    );
    ae = new AntiEntropy({
      state,
      writer: catalog,
      node: { ID: 'id-1', Address: '10.0.0.1', TaggedAddresses: {}, Meta: {} },
      clock,
      random: () => 0,
      log: silentLogger,
      checkUpdateIntervalMs: () => INTERVAL,
    });
    ae.start();
    await ae.idle();
  });
  afterEach(async () => {
    await ae.close();
    await store.close();
  });

  const check = (id: string): StoredCheck | undefined =>
    store.get<StoredCheck>(CATALOG_CHECKS, memberKey(NODE, id))?.value;
  const services = (): string[] => store.list(CATALOG_SERVICES, `${NODE}/`).map((r) => r.key);

  it('writes the node, its services and checks at start', () => {
    expect(services()).toEqual([memberKey(NODE, 'web-1')]);
    expect([check('ttl')?.Status, check('ttl')?.ServiceName]).toEqual(['critical', 'web']);
  });

  it('writes a status change at once, and an output-only change once the interval has passed', async () => {
    state.updateCheck('ttl', 'passing', 'one');
    await ae.idle();
    expect([check('ttl')?.Status, check('ttl')?.Output]).toEqual(['passing', 'one']);

    state.updateCheck('ttl', 'passing', 'two');
    await ae.idle();
    clock.advance(INTERVAL - 1);
    await ae.idle();
    expect(check('ttl')?.Output).toBe('one');
    // A sync for another change meanwhile keeps the output the catalog has.
    state.addCheck(readCheckDefinition({ ID: 'disk', Name: 'disk', TTL: '1m' }));
    await ae.idle();
    expect([check('disk')?.Status, check('ttl')?.Output]).toEqual(['critical', 'one']);
    clock.advance(1);
    await ae.idle();
    expect(check('ttl')?.Output).toBe('two');
  });

  it('leaves entries it does not own to the full sync, which removes them and restores its own', async () => {
    const extra = { Service: { ID: 'stray', Service: 'stray', Port: 1 }, Checks: [], SkipNodeUpdate: true };
    await catalog.register(
      { Datacenter: '', ID: '', Node: NODE, Address: '', TaggedAddresses: {}, NodeMeta: {}, ...extra },
      everyone,
    );
    await catalog.deregister({ Datacenter: '', Node: NODE, ServiceID: 'web-1', CheckID: '' }, everyone);
    state.updateCheck('ttl', 'warning', 'partial');
    await ae.idle();
    expect(services()).toEqual([memberKey(NODE, 'stray'), memberKey(NODE, 'web-1')]);
    clock.advance(FULL_SYNC_INTERVAL_MS);
    await ae.idle();
    expect(services()).toEqual([memberKey(NODE, 'web-1')]);
    expect(check('ttl')?.Status).toBe('warning');
  });

  it("skips the full sync's compare while no one else wrote the node, and runs it once someone did", async () => {
    const before = lists;
    clock.advance(FULL_SYNC_INTERVAL_MS);
    await ae.idle();
    expect(lists).toBe(before);
    await catalog.deregister({ Datacenter: '', Node: NODE, ServiceID: 'web-1', CheckID: '' }, everyone);
    expect(services()).toEqual([]);
    clock.advance(FULL_SYNC_INTERVAL_MS);
    await ae.idle();
    expect(services()).toEqual([memberKey(NODE, 'web-1')]);
  });
});

describe('AntiEntropy, when the catalog cannot be written', () => {
  /** A writer that fails while `failure` is set, and the log lines the agent wrote. */
  async function failingWriter(failure: () => unknown) {
    const lines: [string, string][] = [];
    const record = (level: string) => (_: object, msg?: string) => void lines.push([level, msg ?? '']);
    const log = { ...silentLogger, debug: record('debug'), info: record('info'), warn: record('warn') };
    const clock = new FakeClock(1_000);
    const state = new LocalState(NODE);
    state.addService(readServiceDefinition({ ID: 'web-1', Name: 'web', Port: 80 }));
    let syncs = 0;
    const ae = new AntiEntropy({
      state,
      writer: {
        syncNode: () => {
          syncs++;
          const err = failure();
          return err === undefined ? Promise.resolve() : Promise.reject(err as Error);
        },
        nodeVersion: () => 0,
      },
      node: { ID: 'id-1', Address: '10.0.0.1', TaggedAddresses: {}, Meta: {} },
      clock,
      random: () => 0,
      log,
      checkUpdateIntervalMs: () => INTERVAL,
      retryIntervalMs: 1_000,
    });
    ae.start();
    await ae.idle();
    const retry = async (): Promise<void> => {
      clock.advance(1_000);
      await ae.idle();
    };
    return { ae, lines, retry, syncs: () => syncs };
  }

  it('warns at the first failure, not at each retry, and says when a sync works again', async () => {
    let failing = true;
    const { ae, lines, retry, syncs } = await failingWriter(() => (failing ? new Error('disk gone') : undefined));
    await retry();
    await retry();
    failing = false;
    await retry();
    expect(syncs()).toBe(4);
    expect(lines.filter(([level]) => level !== 'debug')).toEqual([
      ['warn', 'the agent could not sync its services and checks to the catalog; retrying'],
      ['info', 'the agent synced its services and checks to the catalog again'],
    ]);
    await ae.close();
  });

  it('does not warn for a cause logged where it arose (etcd out of space, no leader)', async () => {
    let failing = true;
    const { ae, lines, retry } = await failingWriter(() => (failing ? agentError('STATE_ETCD_NO_SPACE') : undefined));
    await retry();
    failing = false;
    await retry();
    expect(lines.filter(([level]) => level !== 'debug')).toEqual([
      ['info', 'the agent synced its services and checks to the catalog again'],
    ]);
    await ae.close();
  });
});
