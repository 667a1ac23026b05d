// A server agent's CA (Consul's built-in `consul` provider): bootstraps the cluster ID and the first
// root, keeps the CA key and takes serials where its custody says (custody.ts), signs leaves through
// a CertSigner under the CSR rate limit, changes the configuration (rotating and cross-signing the
// root when the key changes) and prunes rotated-out roots after 2 x the leaf TTL. Several servers
// may share one store (a cluster): initialisation and each rotation are guarded commits, so exactly
// one server's CA or rotation lands and the others adopt it (initialisation) or get
// CA_CONFIG_CONFLICT (rotation). A client agent's CA is client-ca.ts.
import type { Metrics } from '../../core/metrics.js';
import { createPublicKey, type KeyObject } from 'node:crypto';
import type { CaMaterial } from './signing-protocol.js';
import type { CaConfig } from '../../config/types.js';
import type { Clock, TimerHandle } from '../../core/clock.js';
import { agentError } from '../../core/errors.js';
import { generateId } from '../../core/ids.js';
import type { Logger } from '../../core/log.js';
import type { Row, StateStore, WriteOp } from '../../state/types.js';
import type { CertificateAuthority, ConfigurationUpdate, IssuedLeaf } from './authority.js';
import { bootstrapConfig, parseProviderConfig, type ProviderConfig } from './ca-config.js';
import { CaRecords, notInitialized } from './ca-records.js';
import { CsrLimiter } from './csr-limiter.js';
import { localCustody, type CaCustody } from './custody.js';
import { certificateId, colonHex, pemBlocks, rfc3339, serialColonHex, toPem, withTrailingNewline } from './encoding.js';
import {
  CA_TABLE,
  CONFIG_KEY,
  ROOTS_TABLE,
  type CaSettings,
  type StoredCaConfig,
  type StoredProvider,
  type StoredRoot,
} from './model.js';
import type { CaKeyStore } from './key-store.js';
import type { SerialAllocator } from './serial-allocator.js';
import type { RootsSnapshot } from './roots-view.js';
import type { CertSigner } from './signer.js';
import { serviceUri, signingUri, trustDomainOf } from './spiffe-id.js';
import {
  createIssuer,
  createRootCertificate,
  crossSign,
  generateCaKey,
  keySpecOf,
  parseCertificate,
  parsePrivateKey,
  signingKeyIdOf,
} from './x509.js';

export interface ServerCaOptions {
  readonly store: StateStore;
  readonly signer: CertSigner;
  readonly clock: Clock;
  readonly random: () => number;
  readonly log: Logger;
  readonly datacenter: string;
  /** The agent's `connect.ca_config`: used only when the store holds no CA yet (as Consul). */
  readonly bootstrap: CaConfig;
  /** `connect.trust_domain` (docs/decisions.md D9), likewise fixed when the CA is created; default `<cluster>.consul`. */
  readonly trustDomain?: string | undefined;
  /** Counts leaves signed and signings refused by the CSR rate limit (docs/decisions.md D11). */
  readonly metrics?: Metrics | undefined;
  /** Where the key lives and serials come from; default: the store is this agent's own (localCustody). */
  readonly custody?: CaCustody | undefined;
}

export const ROOT_NAME = 'Consul CA Primary Cert';
/** Consul's lifetime of the certificate that cross-signs a new root with the old key. */
const CROSS_SIGN_LIFETIME_MS = 7 * 24 * 3_600_000;
/** Pruning runs hourly, as Consul's; roots go 2 x LeafCertTTL (at least 2 h) after rotation. */
const PRUNE_INTERVAL_MS = 3_600_000;

interface ActiveCa {
  readonly key: string;
  readonly provider: StoredProvider;
  readonly material: CaMaterial;
  readonly signingKeyId: string;
  readonly intermediatesPem: string;
}

interface NewRoot {
  readonly key: KeyObject;
  readonly der: Buffer;
  readonly row: StoredRoot;
}

export class ServerCa implements CertificateAuthority {
  private readonly keys: CaKeyStore;
  readonly serials: SerialAllocator;
  private readonly records: CaRecords;
  private active: ActiveCa | undefined;
  private loading: { readonly key: string; readonly ca: Promise<ActiveCa> } | undefined;
  private updating: Promise<unknown> = Promise.resolve();
  private pruneTimer: TimerHandle | undefined;
  /** The revision the previous key sweep read at: keys that existed then are old enough to judge. */
  private sweptAt = 0;
  private closed = false;
  readonly limiter: CsrLimiter;

  private constructor(private readonly o: ServerCaOptions) {
    this.records = new CaRecords(o.store, o.clock);
    this.limiter = new CsrLimiter(() => this.settings(), o.clock);
    const custody = o.custody ?? localCustody(o.store);
    this.keys = custody.keys;
    this.serials = custody.serials;
    // Listed from the start (at 0), so a scrape shows them before the first leaf.
    o.metrics?.counter('svc.connect.ca.leaf.issued');
    o.metrics?.counter('svc.connect.ca.leaf.rate_limited');
  }

  /** Loads the CA from the store, bootstrapping it on first start, and starts pruning. */
  static async open(options: ServerCaOptions): Promise<ServerCa> {
    const ca = new ServerCa(options);
    await ca.initialize();
    ca.schedulePrune();
    return ca;
  }

  private async initialize(): Promise<void> {
    const { store, log } = this.o;
    if (this.records.initialized()) return;
    const clusterId = generateId();
    const trustDomain = this.o.trustDomain ?? trustDomainOf(clusterId);
    const provider = bootstrapConfig(this.o.bootstrap);
    const root = await this.newRoot(provider, clusterId, trustDomain, () => this.takeSerial());
    const config: StoredCaConfig = {
      ClusterID: clusterId,
      TrustDomain: trustDomain,
      Provider: 'consul',
      Config: provider.publicMap,
      ForceWithoutCrossSigning: false,
      Settings: provider.settings,
    };
    const staged = await this.keys.stage(this.providerRow(root, provider));
    const result = await store.commit([
      // The guard makes the first server's CA the only one; the others adopt it below.
      { op: 'set', table: CA_TABLE, key: CONFIG_KEY, value: config, ifIndex: 0 },
      ...staged.ops,
      { op: 'set', table: ROOTS_TABLE, key: root.row.ID, value: root.row },
    ]);
    if (result.ok) {
      log.info({ clusterId, rootId: root.row.ID }, 'initialized the built-in CA');
      return;
    }
    await staged.discard();
    // Present in etcd yet not a valid row (its warning names the key): start anyway; leaves fail
    // with CA_NOT_INITIALIZED until it is written again (docs/cluster-security.md#bad-rows).
    if (!this.records.initialized()) {
      log.error({}, 'the CA configuration in the store is not a valid row; leaves fail until it is written again');
      return;
    }
    log.info(
      { clusterId: this.records.configuration().value.ClusterID },
      'another server initialized the CA first; using it',
    );
  }

  /** The settings in force (read per signing; cheap once memoised on the row's index). */
  settings(): CaSettings {
    return this.records.settings();
  }

  get trustDomain(): string {
    return this.records.trustDomain;
  }

  rootsIndex(): number {
    return this.records.rootsIndex();
  }

  /** Resolves once this server's view holds the roots at `index` or later, or after `withinMs` (remote-signer.ts). */
  rootsReached(index: number, withinMs: number): Promise<void> {
    return this.records.rootsReached(index, withinMs);
  }

  roots(): RootsSnapshot {
    return this.records.roots();
  }

  configuration(): Row<StoredCaConfig> {
    return this.records.configuration();
  }

  /** The active CA with its key, loaded from the key store once per root (and row change). */
  private activeCa(): Promise<ActiveCa> {
    const root = this.records.activeRoot();
    const key = `${root.key}/${root.modifyIndex}`;
    if (this.active?.key === key) return Promise.resolve(this.active);
    if (this.loading?.key === key) return this.loading.ca;
    const ca = this.keys.load(root.key).then((p) => {
      if (p === undefined) throw notInitialized();
      const active: ActiveCa = {
        key,
        provider: p,
        material: { id: p.RootID, privateKeyPem: p.PrivateKey, rootCertPem: p.RootCert },
        signingKeyId: root.value.SigningKeyID,
        intermediatesPem: (root.value.IntermediateCerts ?? []).join(''),
      };
      this.active = active;
      return active;
    });
    this.loading = { key, ca };
    ca.finally(() => {
      if (this.loading?.ca === ca) this.loading = undefined;
    }).catch(() => undefined);
    return ca;
  }

  /**
   * Signs a leaf for a service. The serial comes from the cluster-wide counter (a guarded commit
   * shared by the leaves asked for meanwhile), whose index becomes the leaf's Create/ModifyIndex.
   */
  signLeaf(namespace: string, service: string): Promise<IssuedLeaf> {
    return this.issue(namespace, service, undefined);
  }

  /**
   * Signs a public key generated elsewhere (a client agent's leaf; remote-signer.ts). The URI is
   * built here from this CA's trust domain and datacenter: a requester names only the service.
   */
  signPublicKey(namespace: string, service: string, spki: Uint8Array): Promise<IssuedLeaf> {
    return this.issue(namespace, service, spki);
  }

  private async issue(namespace: string, service: string, spki: Uint8Array | undefined): Promise<IssuedLeaf> {
    this.records.activeRoot(); // throws at once while the CA is not initialised
    const settings = this.settings();
    const uri = serviceUri({ trustDomain: this.trustDomain, namespace, datacenter: this.o.datacenter, service });
    const release = await this.limiter.acquire().catch((err: unknown) => {
      this.o.metrics?.counter('svc.connect.ca.leaf.rate_limited').inc();
      throw err;
    });
    try {
      const ca = await this.activeCa();
      const { serial, index: committed } = await this.serials.take();
      const signed = this.o.signer.sign({
        ca: ca.material,
        serial,
        uri,
        nowMs: this.o.clock.now(),
        ttlMs: settings.leafCertTtlMs,
        trustDomain: this.trustDomain,
        datacenter: this.o.datacenter,
        spki,
      });
      const [material, index] = await Promise.all([signed, committed]);
      this.o.metrics?.counter('svc.connect.ca.leaf.issued').inc();
      return {
        serial,
        serialNumber: serialColonHex(serial),
        certPem: material.certPem + ca.intermediatesPem,
        privateKeyPem: material.privateKeyPem,
        uri,
        validAfter: material.notBefore,
        validBefore: material.notAfter,
        index,
        signingKeyId: ca.signingKeyId,
      };
    } finally {
      release();
    }
  }

  /** A serial for a root or a cross-signature, recorded before the certificate is published. */
  private async takeSerial(): Promise<bigint> {
    const { serial, index } = await this.serials.take();
    await index;
    return serial;
  }

  /** A new root from the provider config: the supplied cert and key, or a generated key. */
  private async newRoot(
    provider: ProviderConfig,
    clusterId: string,
    trustDomain: string,
    serial: () => Promise<bigint>,
  ): Promise<NewRoot> {
    const now = this.o.clock.now();
    if (provider.rootCert !== undefined) {
      const der = pemBlocks(provider.rootCert, 'CERTIFICATE')[0];
      if (der === undefined) throw agentError('CA_BAD_CERT', { detail: 'no PEM certificate found' });
      const key = parsePrivateKey(provider.privateKey ?? '');
      createIssuer(key, der); // checks that the key belongs to the certificate
      return { key, der, row: this.rootRow(der, key, clusterId) };
    }
    const key =
      provider.privateKey !== undefined
        ? parsePrivateKey(provider.privateKey)
        : await generateCaKey({ type: provider.settings.privateKeyType, bits: provider.settings.privateKeyBits });
    const rootSerial = await serial();
    const der = createRootCertificate({
      key,
      serial: rootSerial,
      commonName: `pri-${this.randomBase36(8)}.consul.ca.${clusterId.slice(0, 8)}.consul`,
      uri: signingUri(trustDomain),
      notBefore: now,
      notAfter: now + provider.settings.rootCertTtlMs,
    });
    return { key, der, row: this.rootRow(der, key, clusterId) };
  }

  private rootRow(der: Buffer, key: KeyObject, clusterId: string): StoredRoot {
    const cert = parseCertificate(der);
    const spec = keySpecOf(createPublicKey(key));
    return {
      ID: certificateId(der),
      Name: ROOT_NAME,
      // Consul reports the low 64 bits of the serial (big.Int.Uint64).
      SerialNumber: BigInt.asUintN(64, cert.serial).toString(),
      SigningKeyID: colonHex(signingKeyIdOf(cert)),
      ExternalTrustDomain: clusterId,
      NotBefore: rfc3339(cert.notBefore),
      NotAfter: rfc3339(cert.notAfter),
      RootCert: withTrailingNewline(toPem(der, 'CERTIFICATE')),
      IntermediateCerts: null,
      Active: true,
      PrivateKeyType: spec.type,
      PrivateKeyBits: spec.bits,
      RotatedOutAt: null,
    };
  }

  private providerRow(root: NewRoot, provider: ProviderConfig): StoredProvider {
    return {
      RootID: root.row.ID,
      PrivateKey: root.key.export({ type: 'pkcs8', format: 'pem' }) as string,
      RootCert: root.row.RootCert,
      SuppliedPrivateKey: provider.privateKey ?? null,
      SuppliedRootCert: provider.rootCert ?? null,
    };
  }

  private randomBase36(n: number): string {
    let out = '';
    for (let i = 0; i < n; i++) out += Math.floor(this.o.random() * 36).toString(36);
    return out;
  }

  /** PUT /v1/connect/ca/configuration: one change at a time, in arrival order. */
  updateConfiguration(update: ConfigurationUpdate): Promise<void> {
    const run = this.updating.then(() => this.applyUpdate(update));
    this.updating = run.catch(() => undefined);
    return run;
  }

  private async applyUpdate(update: ConfigurationUpdate): Promise<void> {
    if (update.provider !== 'consul') throw agentError('CA_UNKNOWN_PROVIDER', { provider: update.provider });
    const state = update.state;
    if (state !== null && state !== undefined && !(typeof state === 'object' && Object.keys(state).length === 0)) {
      // The built-in provider keeps no state, so any non-empty State differs from the stored one.
      throw agentError('CA_STATE_READ_ONLY');
    }
    const next = parseProviderConfig(update.config);
    const configRow = this.records.configuration();
    const current = configRow.value;
    const activeKey = (await this.activeCa()).provider;
    const stored: StoredCaConfig = {
      ClusterID: current.ClusterID,
      ...(current.TrustDomain === undefined ? {} : { TrustDomain: current.TrustDomain }),
      Provider: 'consul',
      Config: next.publicMap,
      ForceWithoutCrossSigning: update.forceWithoutCrossSigning,
      Settings: next.settings,
    };
    const sameIdentity =
      (next.privateKey ?? null) === activeKey.SuppliedPrivateKey &&
      (next.rootCert ?? null) === activeKey.SuppliedRootCert &&
      next.settings.privateKeyType === current.Settings.privateKeyType &&
      next.settings.privateKeyBits === current.Settings.privateKeyBits;
    const configOp: WriteOp = {
      op: 'set',
      table: CA_TABLE,
      key: CONFIG_KEY,
      value: stored,
      ifIndex: configRow.modifyIndex,
    };
    if (sameIdentity) {
      if (JSON.stringify(stored) === JSON.stringify(current)) return; // nothing changed: no write
      await this.commitOrConflict([configOp]);
      return;
    }
    const root = await this.newRoot(next, current.ClusterID, this.trustDomain, () => this.takeSerial());
    if (root.row.ID === activeKey.RootID) {
      const staged = await this.keys.stage(this.providerRow(root, next));
      await this.commitOrConflict([configOp, ...staged.ops]);
      return;
    }
    await this.rotate(root, next, configOp, activeKey);
  }

  /** A rotation: the old key cross-signs the new root; old roots stay, inactive, until pruned. */
  private async rotate(root: NewRoot, provider: ProviderConfig, configOp: WriteOp, old: StoredProvider): Promise<void> {
    const now = this.o.clock.now();
    const oldCert = pemBlocks(old.RootCert, 'CERTIFICATE')[0] as Buffer;
    const oldIssuer = createIssuer(parsePrivateKey(old.PrivateKey), oldCert);
    const cross = crossSign(
      oldIssuer,
      parseCertificate(root.der),
      await this.takeSerial(),
      now,
      CROSS_SIGN_LIFETIME_MS,
    );
    const newRow: StoredRoot = { ...root.row, IntermediateCerts: [toPem(cross, 'CERTIFICATE')] };
    // The new key is stored before the commit that makes its root active; the config guard lets one
    // rotation through when servers rotate at once, and the others drop their staged key.
    const staged = await this.keys.stage(this.providerRow(root, provider));
    const ops: WriteOp[] = [configOp, ...staged.ops];
    for (const row of this.records.rootRows()) {
      if (!row.value.Active) continue;
      ops.push({
        op: 'set',
        table: ROOTS_TABLE,
        key: row.key,
        value: { ...row.value, Active: false, RotatedOutAt: rfc3339(now) },
        ifIndex: row.modifyIndex,
      });
    }
    ops.push({ op: 'set', table: ROOTS_TABLE, key: newRow.ID, value: newRow });
    try {
      await this.commitOrConflict(ops);
    } catch (err) {
      await staged.discard().catch(() => undefined);
      throw err;
    }
    this.o.log.info({ oldRootId: old.RootID, newRootId: newRow.ID }, 'rotated the CA root');
  }

  private async commitOrConflict(ops: readonly WriteOp[]): Promise<void> {
    const result = await this.o.store.commit(ops);
    if (!result.ok) throw agentError('CA_CONFIG_CONFLICT');
  }

  /**
   * Drops inactive roots rotated out more than 2 x LeafCertTTL ago (every leaf they signed has
   * expired by then) and expired intermediates of the remaining roots. Returns the roots removed.
   */
  async pruneRoots(): Promise<number> {
    const now = this.o.clock.now();
    const keepFor = 2 * this.settings().leafCertTtlMs;
    const ops: WriteOp[] = [];
    const removedIds: string[] = [];
    let removed = 0;
    for (const row of this.records.rootRows()) {
      const r = row.value;
      if (!r.Active && r.RotatedOutAt !== null && Date.parse(r.RotatedOutAt) + keepFor <= now) {
        ops.push({ op: 'delete', table: ROOTS_TABLE, key: row.key, ifIndex: row.modifyIndex });
        removedIds.push(row.key);
        removed++;
        continue;
      }
      const intermediates = r.IntermediateCerts ?? [];
      const live = intermediates.filter(
        (pem) => parseCertificate(pemBlocks(pem, 'CERTIFICATE')[0] as Buffer).notAfter > now,
      );
      if (live.length < intermediates.length) {
        ops.push({
          op: 'set',
          table: ROOTS_TABLE,
          key: row.key,
          value: { ...r, IntermediateCerts: live.length === 0 ? null : live },
          ifIndex: row.modifyIndex,
        });
      }
    }
    if (ops.length === 0) return 0;
    const result = await this.o.store.commit(ops);
    if (!result.ok) return 0; // a rotation got in first; the next run looks again
    for (const id of removedIds) await this.keys.remove(id);
    if (removed > 0) this.o.log.info({ removed }, 'pruned rotated-out CA roots');
    return removed;
  }

  /**
   * Drops CA keys whose root was never published. A key is staged moments before its root's commit,
   * so only keys created before the previous run (an hour ago) are candidates: a rotation in flight
   * on another server is never touched.
   */
  async sweepKeys(): Promise<number> {
    // A view cut off from etcd may miss a root published meanwhile: judge only with a live one.
    if (!this.o.store.health.connected) return 0;
    const published = new Set(this.records.rootRows().map((row) => row.key));
    const { removed, revision } = await this.keys.sweep(published, this.sweptAt);
    this.sweptAt = revision;
    if (removed > 0) this.o.log.info({ removed }, 'removed CA keys of roots never published');
    return removed;
  }

  private schedulePrune(): void {
    if (this.closed) return;
    this.pruneTimer = this.o.clock.setTimer(PRUNE_INTERVAL_MS, () => {
      this.pruneRoots()
        .then(() => this.sweepKeys())
        .then(
          () => this.schedulePrune(),
          (err: unknown) => {
            this.o.log.warn({ err }, 'pruning CA roots failed');
            this.schedulePrune();
          },
        );
    });
  }

  close(): void {
    this.closed = true;
    this.pruneTimer?.cancel();
  }
}
