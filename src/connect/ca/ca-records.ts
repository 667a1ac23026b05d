// The CA's rows in the shared view (configuration and roots), as both roles read them: memoised on
// the rows' indexes, so a read per request costs a lookup once nothing changed.
import type { Clock } from '../../core/clock.js';
import { agentError, type AgentError } from '../../core/errors.js';
import type { Row, StateStore } from '../../state/types.js';
import { CA_TABLE, CONFIG_KEY, ROOTS_TABLE, type CaSettings, type StoredCaConfig, type StoredRoot } from './model.js';
import { buildRootsSnapshot, type RootsSnapshot } from './roots-view.js';
import { trustDomainOf } from './spiffe-id.js';

export const notInitialized = (): AgentError => agentError('CA_NOT_INITIALIZED');

export class CaRecords {
  private rootsMemo: RootsSnapshot | undefined;
  private settingsMemo: { readonly index: number; readonly settings: CaSettings } | undefined;

  constructor(
    private readonly store: StateStore,
    private readonly clock: Clock,
  ) {}

  /** Whether some server has made the CA (its configuration row exists). */
  initialized(): boolean {
    return this.store.get(CA_TABLE, CONFIG_KEY) !== undefined;
  }

  /** The stored configuration row; throws CA_NOT_INITIALIZED before there is one. */
  configuration(): Row<StoredCaConfig> {
    const row = this.store.get<StoredCaConfig>(CA_TABLE, CONFIG_KEY);
    if (row === undefined) throw notInitialized();
    return row;
  }

  /** The settings in force (read per signing; cheap once memoised on the row's index). */
  settings(): CaSettings {
    const row = this.configuration();
    if (this.settingsMemo?.index !== row.modifyIndex) {
      this.settingsMemo = { index: row.modifyIndex, settings: row.value.Settings };
    }
    return this.settingsMemo.settings;
  }

  get trustDomain(): string {
    const config = this.configuration().value;
    return config.TrustDomain ?? trustDomainOf(config.ClusterID);
  }

  rootsIndex(): number {
    return this.store.tableIndex(ROOTS_TABLE);
  }

  /**
   * Resolves once this agent's view holds the roots at `index` or later, or after `withinMs`: a
   * client agent that saw a rotation first asks for a leaf of the new root (remote-signer.ts).
   */
  rootsReached(index: number, withinMs: number): Promise<void> {
    if (this.rootsIndex() >= index) return Promise.resolve();
    return new Promise((resolve) => {
      let cancel = (): void => {};
      const timer = this.clock.setTimer(withinMs, () => {
        cancel();
        resolve();
      });
      const check = (): void => {
        if (this.rootsIndex() >= index) {
          timer.cancel();
          resolve();
          return;
        }
        cancel = this.store.watchOnce({ table: ROOTS_TABLE }, check);
      };
      check();
    });
  }

  roots(): RootsSnapshot {
    const index = this.rootsIndex();
    if (this.rootsMemo?.index === index) return this.rootsMemo;
    this.rootsMemo = buildRootsSnapshot(this.rootRows(), this.trustDomain, index);
    return this.rootsMemo;
  }

  rootRows(): Row<StoredRoot>[] {
    return this.store.list<StoredRoot>(ROOTS_TABLE, '');
  }

  /** The active root's row (the one with Active set). */
  activeRoot(): Row<StoredRoot> {
    const root = this.rootRows().find((row) => row.value.Active);
    if (root === undefined) throw notInitialized();
    return root;
  }
}
