// The CA provider: bootstrap contents, serial and index per signing, configuration changes
// (TTL-only, no-op, invalid, rotation with cross-signing) and pruning with a fake clock.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CA_TABLE, PROVIDER_KEY, ROOTS_TABLE, SERIAL_KEY, type StoredRoot } from '../../../../src/connect/ca/model.js';
import { pemBlocks } from '../../../../src/connect/ca/encoding.js';
import { ServerCa } from '../../../../src/connect/ca/server-ca.js';
import { LocalSigner } from '../../../../src/connect/ca/signer.js';
import { createRootCertificate, generateCaKey, keyIdOf } from '../../../../src/connect/ca/x509.js';
import { FakeClock } from '../../../../src/core/clock.js';
import { silentLogger } from '../../../../src/core/log.js';
import { openEmbeddedStore } from '../../../../src/state/embedded/index.js';
import { DEFAULT_CA, HOUR, START, caFixture, seededRandom, settle } from './support.js';

const certs = (pem: string): X509Certificate[] => pemBlocks(pem, 'CERTIFICATE').map((der) => new X509Certificate(der));

describe('bootstrap', () => {
  it('creates a cluster ID, a trust domain and one active root', async () => {
    const { manager } = await caFixture();
    const snapshot = manager.roots();
    expect(manager.trustDomain).toMatch(/^[0-9a-f-]{36}\.consul$/);
    expect(snapshot.roots).toHaveLength(1);
    const root = snapshot.roots[0]!.value;
    expect(snapshot.activeRootId).toBe(root.ID);
    expect(root).toMatchObject({
      Name: 'Consul CA Primary Cert',
      Active: true,
      PrivateKeyType: 'ec',
      PrivateKeyBits: 256,
      IntermediateCerts: null,
      SerialNumber: '1',
    });
    expect(root.ExternalTrustDomain).toBe(manager.trustDomain.replace('.consul', ''));
    expect(root.ID).toMatch(/^([0-9a-f]{2}:){19}[0-9a-f]{2}$/);
    expect(root.SigningKeyID).toMatch(/^([0-9a-f]{2}:){31}[0-9a-f]{2}$/);
    expect(root.NotBefore).toBe('2026-01-01T12:00:00Z');
    expect(Date.parse(root.NotAfter) - Date.parse(root.NotBefore)).toBe(87600 * HOUR);
    const [cert] = certs(root.RootCert);
    expect(cert!.subject).toMatch(
      new RegExp(`^CN=pri-[0-9a-z]{8}\\.consul\\.ca\\.${manager.trustDomain.slice(0, 8)}\\.consul$`),
    );
    expect(cert!.subjectAltName).toBe(`URI:spiffe://${manager.trustDomain}`);
  });

  it('uses a configured trust domain (D9) for the roots and every leaf', async () => {
    const store = await openEmbeddedStore({ log: silentLogger });
    const manager = await ServerCa.open({
      store,
      signer: new LocalSigner(),
      clock: new FakeClock(START),
      random: seededRandom(),
      log: silentLogger,
      datacenter: 'dc1',
      bootstrap: DEFAULT_CA,
      trustDomain: 'mesh.example',
    });
    expect(manager.trustDomain).toBe('mesh.example');
    expect(manager.roots().trustDomain).toBe('mesh.example');
    expect(certs(manager.roots().roots[0]!.value.RootCert)[0]!.subjectAltName).toBe('URI:spiffe://mesh.example');
    const leaf = await manager.signLeaf('default', 'web');
    expect(leaf.uri).toBe('spiffe://mesh.example/ns/default/dc/dc1/svc/web');
    // Fixed once created: a later start with another setting keeps the stored one.
    const again = await ServerCa.open({
      store,
      signer: new LocalSigner(),
      clock: new FakeClock(START),
      random: seededRandom(),
      log: silentLogger,
      datacenter: 'dc1',
      bootstrap: DEFAULT_CA,
      trustDomain: 'other.example',
    });
    expect(again.trustDomain).toBe('mesh.example');
  });

  it('honours the configured key type and size', async () => {
    const { manager } = await caFixture({ privateKeyType: 'ec', privateKeyBits: 384 });
    expect(manager.roots().roots[0]!.value).toMatchObject({ PrivateKeyType: 'ec', PrivateKeyBits: 384 });
  });

  it('uses a supplied root certificate and key', async () => {
    const key = await generateCaKey({ type: 'ec', bits: 256 });
    const der = createRootCertificate({
      key,
      serial: 777n,
      commonName: 'operator root',
      uri: 'spiffe://x.consul',
      notBefore: START,
      notAfter: START + 1000 * HOUR,
    });
    const pem = `-----BEGIN CERTIFICATE-----\n${der.toString('base64')}\n-----END CERTIFICATE-----`;
    const { manager } = await caFixture({
      privateKey: key.export({ type: 'sec1', format: 'pem' }) as string,
      rootCert: pem,
    });
    const root = manager.roots().roots[0]!.value;
    expect(root.SerialNumber).toBe('777');
    expect(root.RootCert.endsWith('\n')).toBe(true);
    const leaf = await manager.signLeaf('default', 'web');
    expect(certs(leaf.certPem)[0]!.verify(certs(root.RootCert)[0]!.publicKey)).toBe(true);
  });

  it('loads the same CA from a store that already holds one', async () => {
    const f = await caFixture();
    await f.manager.signLeaf('default', 'web');
    const again = await ServerCa.open({
      store: f.store,
      signer: new LocalSigner(),
      clock: f.clock,
      random: seededRandom(7),
      log: silentLogger,
      datacenter: 'dc1',
      bootstrap: { ...DEFAULT_CA, privateKeyType: 'rsa', privateKeyBits: 2048 },
    });
    expect(again.roots().activeRootId).toBe(f.manager.roots().activeRootId);
    const leaf = await again.signLeaf('default', 'web');
    expect(leaf.serial).toBe(3n); // root 1, first leaf 2
  });

  it('never serves the CA key through the roots or the configuration', async () => {
    const { manager, store } = await caFixture();
    const key = store.get<{ PrivateKey: string }>(CA_TABLE, PROVIDER_KEY)!.value.PrivateKey;
    expect(createPrivateKey(key).asymmetricKeyType).toBe('ec');
    const b64 = key.split('\n').slice(1, -2).join('');
    expect(JSON.stringify(manager.roots())).not.toContain(b64.slice(0, 40));
    expect(JSON.stringify(manager.configuration())).not.toContain(b64.slice(0, 40));
  });
});

describe('leaf signing', () => {
  it('takes increasing serials and records each signing at its own index', async () => {
    const { manager, store } = await caFixture();
    const leaves = await Promise.all(['a', 'b', 'c', 'a'].map((s) => manager.signLeaf('default', s)));
    expect(leaves.map((l) => l.serial)).toEqual([2n, 3n, 4n, 5n]);
    expect(leaves.map((l) => l.serialNumber)).toEqual(['02', '03', '04', '05']);
    const indexes = leaves.map((l) => l.index);
    expect(new Set(indexes).size).toBe(4);
    expect([...indexes].sort((x, y) => x - y)).toEqual(indexes);
    expect(store.get<{ Next: string }>(CA_TABLE, SERIAL_KEY)!.value.Next).toBe('6');
    expect(store.keyIndex(CA_TABLE, SERIAL_KEY)).toBe(indexes[3]);
    // Signings do not touch the roots, so nothing watching the roots wakes.
    expect(store.tableIndex(ROOTS_TABLE)).toBeLessThan(indexes[0]!);
    const cert = certs(leaves[2]!.certPem)[0]!;
    expect(cert.serialNumber).toBe('04');
    expect(cert.subjectAltName).toBe(`URI:spiffe://${manager.trustDomain}/ns/default/dc/dc1/svc/c`);
    expect(leaves[2]!.validBefore - leaves[2]!.validAfter).toBe(72 * HOUR);
    expect(leaves[2]!.validAfter).toBe(START - 60_000);
  });

  it('puts the namespace in the SPIFFE ID', async () => {
    const { manager } = await caFixture();
    const leaf = await manager.signLeaf('team-a', 'api');
    expect(leaf.uri).toBe(`spiffe://${manager.trustDomain}/ns/team-a/dc/dc1/svc/api`);
  });

  it('rejects past the CSR rate limit with 429 text', async () => {
    // 2/s with a burst of 1: the second waits 500 ms (the most allowed), the third would wait 1 s.
    const { manager, signer, clock } = await caFixture({ csrMaxPerSecond: 2 });
    const pending = Promise.allSettled([1, 2, 3].map((i) => manager.signLeaf('default', `s${i}`)));
    await Promise.resolve();
    clock.advance(500);
    const results = await pending;
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({
      code: 'CSR_RATE_LIMITED',
      kind: 'rate-limited',
      message: 'Rate limit reached, try again later',
    });
    expect(signer.signed).toBe(2);
  });
});

describe('configuration', () => {
  const update = (config: Record<string, unknown>, extra: Partial<{ provider: string; state: unknown }> = {}) => ({
    provider: extra.provider ?? 'consul',
    config,
    state: extra.state ?? null,
    forceWithoutCrossSigning: false,
  });

  it('starts with the TTLs and no private key in Config', async () => {
    const { manager } = await caFixture({ csrMaxPerSecond: 50 });
    expect(manager.configuration().value.Config).toEqual({
      IntermediateCertTTL: '8760h',
      LeafCertTTL: '72h',
      RootCertTTL: '87600h',
    });
  });

  it('changes TTLs without rotating, and a repeated body writes nothing', async () => {
    const { manager, store } = await caFixture();
    const rootId = manager.roots().activeRootId;
    await manager.updateConfiguration(update({ LeafCertTTL: '24h' }));
    expect(manager.roots().activeRootId).toBe(rootId);
    expect(manager.roots().roots).toHaveLength(1);
    expect(manager.settings().leafCertTtlMs).toBe(24 * HOUR);
    const index = store.index;
    await manager.updateConfiguration(update({ LeafCertTTL: '24h' }));
    expect(store.index).toBe(index);
    const leaf = await manager.signLeaf('default', 'web');
    expect(leaf.validBefore - leaf.validAfter).toBe(24 * HOUR);
  });

  it('rejects invalid configurations with Consul texts', async () => {
    const { manager } = await caFixture();
    const cases: [Record<string, unknown>, string][] = [
      [{ LeafCertTTL: '30m' }, 'error configuring provider: leaf cert TTL must be greater or equal than 1h0m0s'],
      [{ PrivateKeyType: 'dsa' }, "error configuring provider: private key type must be either 'ec' or 'rsa'"],
      [
        { PrivateKeyType: 'rsa', PrivateKeyBits: 1024 },
        'error configuring provider: RSA key length must be 2048 or 4096 bits',
      ],
      [{ RootCert: 'x' }, 'error configuring provider: must provide a private key when providing a root cert'],
      [{ LeafCertTTL: 'soon' }, `error parsing CA config: 'LeafCertTTL': time: invalid duration "soon"`],
    ];
    for (const [config, message] of cases) {
      const code = message.startsWith('error parsing CA config') ? 'CA_CONFIG_PARSE' : 'CA_CONFIG_INVALID';
      await expect(manager.updateConfiguration(update(config))).rejects.toMatchObject({
        code,
        kind: 'invalid',
        message,
      });
    }
    await expect(manager.updateConfiguration(update({}, { provider: 'vault' }))).rejects.toMatchObject({
      code: 'CA_UNKNOWN_PROVIDER',
      kind: 'invalid',
      message: 'unknown CA provider "vault"',
    });
    await expect(manager.updateConfiguration(update({}, { state: { a: 'b' } }))).rejects.toMatchObject({
      code: 'CA_STATE_READ_ONLY',
      message: 'Provider State is read-only. It must be omitted or identical to the current value',
    });
  });

  it('rotates on a key change: new root active, old kept, cross-signed by the old key', async () => {
    const { manager, clock } = await caFixture();
    const oldLeaf = await manager.signLeaf('default', 'web');
    const before = manager.roots();
    const oldRoot = before.roots[0]!.value;
    clock.advance(HOUR);
    await manager.updateConfiguration(update({ PrivateKeyType: 'rsa', PrivateKeyBits: 2048 }));
    const after = manager.roots();
    expect(after.roots).toHaveLength(2);
    const newRoot = after.roots.find((r) => r.value.Active)!.value;
    const old = after.roots.find((r) => !r.value.Active)!.value;
    expect(old.ID).toBe(oldRoot.ID);
    expect(old.RotatedOutAt).toBe('2026-01-01T13:00:00Z');
    expect(after.activeRootId).toBe(newRoot.ID);
    expect(newRoot).toMatchObject({ PrivateKeyType: 'rsa', PrivateKeyBits: 2048 });
    expect(newRoot.IntermediateCerts).toHaveLength(1);
    const [cross] = certs(newRoot.IntermediateCerts![0]!);
    const [oldCert] = certs(oldRoot.RootCert);
    const [newCert] = certs(newRoot.RootCert);
    expect(cross!.subject).toBe(newCert!.subject);
    expect(cross!.checkIssued(oldCert!)).toBe(true);
    expect(cross!.verify(oldCert!.publicKey)).toBe(true);
    expect(BigInt(`0x${cross!.serialNumber}`)).toBe(BigInt(newRoot.SerialNumber) + 1n);

    // New leaves: signed by the new key, with the cross-signed root after the leaf.
    const leaf = await manager.signLeaf('default', 'web');
    expect(leaf.serial).toBeGreaterThan(oldLeaf.serial);
    expect(leaf.signingKeyId).toBe(newRoot.SigningKeyID);
    const chain = certs(leaf.certPem);
    expect(chain).toHaveLength(2);
    expect(chain[0]!.verify(newCert!.publicKey)).toBe(true);
    expect(chain[1]!.fingerprint256).toBe(cross!.fingerprint256);
    expect(newRoot.SigningKeyID.replace(/:/g, '')).toBe(
      keyIdOf(newCert!.publicKey.export({ type: 'spki', format: 'der' })).toString('hex'),
    );
  });

  it('prunes a rotated-out root after 2 x the leaf TTL, not before', async () => {
    const { manager, clock, store } = await caFixture({ leafCertTtlMs: 2 * HOUR, intermediateCertTtlMs: 8760 * HOUR });
    await manager.updateConfiguration(update({ LeafCertTTL: '2h', PrivateKeyBits: 384 }));
    expect(manager.roots().roots).toHaveLength(2);
    clock.advance(3 * HOUR); // the hourly pruning ran: 3 h < 4 h
    await settle();
    expect(manager.roots().roots).toHaveLength(2);
    clock.advance(HOUR + 1);
    await settle();
    expect(store.list<StoredRoot>(ROOTS_TABLE, '').map((r) => r.value.Active)).toEqual([true]);
    expect(await manager.pruneRoots()).toBe(0);
  });

  it('drops an expired cross-signed intermediate', async () => {
    const { manager, clock } = await caFixture({ leafCertTtlMs: 100 * HOUR, intermediateCertTtlMs: 8760 * HOUR });
    await manager.updateConfiguration(update({ LeafCertTTL: '100h', PrivateKeyBits: 384 }));
    expect(manager.roots().activeIntermediatesPem).not.toBe('');
    clock.advance(7 * 24 * HOUR);
    await manager.pruneRoots();
    const active = manager.roots().roots.find((r) => r.value.Active)!.value;
    expect(active.IntermediateCerts).toBeNull();
    expect(manager.roots().roots).toHaveLength(2); // 168 h < 2 x 100 h: the old root stays
  });
});
