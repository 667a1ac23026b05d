// A client agent's leaves signed by a server through the signing mailbox (here an in-memory one; the
// etcd channel is exercised in test/cluster/): the key pair stays with the client, the server
// builds the SPIFFE ID itself and refuses another datacenter or a key that is not P-256; a server
// whose view is behind the client's roots waits for them before signing.
import type { Mailbox } from '../../../../src/core/mailbox.js';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { RemoteLeafSource, serveSigningRequests } from '../../../../src/connect/ca/remote-signer.js';
import { LocalSigner } from '../../../../src/connect/ca/signer.js';
import { silentLogger } from '../../../../src/core/log.js';
import { CaRecords } from '../../../../src/connect/ca/ca-records.js';
import { ClientCa } from '../../../../src/connect/ca/client-ca.js';
import { caFixture, settle } from './support.js';

/** Requests go straight to the one handler served, or get no answer when none is. */
class MemoryChannel implements Mailbox {
  handler: ((body: unknown) => Promise<unknown>) | undefined;
  seen: unknown[] = [];
  async request(body: unknown): Promise<unknown> {
    this.seen.push(JSON.parse(JSON.stringify(body)));
    return this.handler === undefined ? undefined : JSON.parse(JSON.stringify(await this.handler(body)));
  }
  serve(handler: (body: unknown) => Promise<unknown>): void {
    this.handler = handler;
  }
}

describe('remote signing', () => {
  it('has a server sign the public key of a pair the client made; the private key never travels', async () => {
    const { manager } = await caFixture();
    const channel = new MemoryChannel();
    serveSigningRequests(channel, manager, { datacenter: 'dc1', log: silentLogger, authorize: () => undefined });
    const client = new RemoteLeafSource({ channel, datacenter: 'dc1', node: 'n1', keys: new LocalSigner() });
    const leaf = await client.signLeaf('default', 'web');
    const cert = new X509Certificate(leaf.certPem);
    expect(cert.verify(new X509Certificate(manager.roots().roots[0]!.value.RootCert).publicKey)).toBe(true);
    expect(cert.checkPrivateKey(createPrivateKey(leaf.privateKeyPem))).toBe(true);
    expect(leaf.uri).toBe(`spiffe://${manager.trustDomain}/ns/default/dc/dc1/svc/web`);
    expect(BigInt(`0x${cert.serialNumber}`)).toBe(leaf.serial);
    expect(JSON.stringify(channel.seen)).not.toContain('PRIVATE KEY');
  });

  it('refuses another datacenter and a key that is not P-256, with their codes', async () => {
    const { manager } = await caFixture();
    const channel = new MemoryChannel();
    serveSigningRequests(channel, manager, { datacenter: 'dc1', log: silentLogger, authorize: () => undefined });
    await expect(
      new RemoteLeafSource({ channel, datacenter: 'dc2', node: 'n1', keys: new LocalSigner() }).signLeaf(
        'default',
        'web',
      ),
    ).rejects.toMatchObject({ code: 'CA_BAD_CSR', kind: 'invalid' });
    const bogus = { generateKey: () => Promise.resolve({ spki: Buffer.from('not a key'), privateKeyPem: '' }) };
    await expect(
      new RemoteLeafSource({ channel, datacenter: 'dc1', node: 'n1', keys: bogus }).signLeaf('default', 'web'),
    ).rejects.toMatchObject({ code: 'CA_BAD_CSR' });
  });

  it('waits, on a server whose view is behind the client roots, for those roots before signing', async () => {
    const { manager, clock } = await caFixture();
    const channel = new MemoryChannel();
    serveSigningRequests(channel, manager, { datacenter: 'dc1', log: silentLogger, authorize: () => undefined });
    // The client's view already holds the roots of a rotation this server has not applied.
    const ahead = manager.rootsIndex() + 1;
    const client = new RemoteLeafSource({
      channel,
      datacenter: 'dc1',
      node: 'n1',
      keys: new LocalSigner(),
      rootsIndex: () => ahead,
    });
    let signed = false;
    const leaf = client.signLeaf('default', 'web').finally(() => (signed = true));
    await settle();
    expect(signed).toBe(false);
    await manager.updateConfiguration({
      provider: 'consul',
      config: { PrivateKeyType: 'ec', PrivateKeyBits: 384 },
      state: null,
      forceWithoutCrossSigning: false,
    });
    const active = manager.roots().roots.find((r) => r.value.Active)!.value;
    expect(active.PrivateKeyBits).toBe(384);
    expect((await leaf).signingKeyId).toBe(active.SigningKeyID);
    expect(new X509Certificate((await leaf).certPem).verify(new X509Certificate(active.RootCert).publicKey)).toBe(true);

    // Roots that never come: the server signs with what it has once the catch-up time is over.
    const never = new RemoteLeafSource({
      channel,
      datacenter: 'dc1',
      node: 'n1',
      keys: new LocalSigner(),
      rootsIndex: () => manager.rootsIndex() + 100,
    });
    const timers = clock.pendingTimers;
    signed = false;
    const late = never.signLeaf('default', 'api').finally(() => (signed = true));
    while (clock.pendingTimers === timers) await settle(); // the server is waiting
    expect(signed).toBe(false);
    clock.advance(2_000);
    expect((await late).signingKeyId).toBe(active.SigningKeyID);
  });

  it('refuses an answer that certifies another key or another service (a forged answer on the channel)', async () => {
    const { manager } = await caFixture();
    const honest = new MemoryChannel();
    serveSigningRequests(honest, manager, { datacenter: 'dc1', log: silentLogger, authorize: () => undefined });
    // A real leaf of this CA, for another key: what another client agent could copy into an answer.
    const stolen = (
      await new RemoteLeafSource({ channel: honest, datacenter: 'dc1', node: 'n2', keys: new LocalSigner() }).signLeaf(
        'default',
        'web',
      )
    ).certPem;
    const forged: Mailbox = {
      request: async (body) => ({ ...((await honest.request(body)) as object), CertPEM: stolen }),
      serve: () => {},
    };
    await expect(
      new RemoteLeafSource({ channel: forged, datacenter: 'dc1', node: 'n1', keys: new LocalSigner() }).signLeaf(
        'default',
        'web',
      ),
    ).rejects.toMatchObject({
      code: 'CA_SIGN_FAILED',
      message: 'the signing answer does not certify the requested key',
    });
    // The right key, but an answer naming another service.
    const renamed: Mailbox = {
      request: async (body) => honest.request({ ...(body as object), Service: 'db' }),
      serve: () => {},
    };
    await expect(
      new RemoteLeafSource({ channel: renamed, datacenter: 'dc1', node: 'n1', keys: new LocalSigner() }).signLeaf(
        'default',
        'web',
      ),
    ).rejects.toMatchObject({ code: 'CA_SIGN_FAILED' });
  });

  it('fails with CA_NO_SERVER (unavailable) when no server answers or the channel fails', async () => {
    const silent = new MemoryChannel();
    await expect(
      new RemoteLeafSource({ channel: silent, datacenter: 'dc1', node: 'n1', keys: new LocalSigner() }).signLeaf(
        'default',
        'web',
      ),
    ).rejects.toMatchObject({ code: 'CA_NO_SERVER', kind: 'unavailable' });
    const broken: Mailbox = { request: () => Promise.reject(new Error('No cluster leader')), serve: () => {} };
    await expect(
      new RemoteLeafSource({ channel: broken, datacenter: 'dc1', node: 'n1', keys: new LocalSigner() }).signLeaf(
        'default',
        'web',
      ),
    ).rejects.toMatchObject({ code: 'CA_NO_SERVER' });
  });

  it('fails at once with CA_NO_SERVER, asking nobody, when the member list holds no server', async () => {
    let asked = 0;
    const channel: Mailbox = {
      request: () => {
        asked++;
        return Promise.resolve(undefined);
      },
      serve: () => {},
    };
    const options = { channel, datacenter: 'dc1', node: 'n1', keys: new LocalSigner() };
    await expect(
      new RemoteLeafSource({ ...options, serverKnown: () => false }).signLeaf('default', 'web'),
    ).rejects.toMatchObject({
      code: 'CA_NO_SERVER',
      kind: 'unavailable',
      message: 'No CA server answered the leaf signing request: no server agent is a member of the cluster',
    });
    expect(asked).toBe(0);
    await expect(
      new RemoteLeafSource({ ...options, serverKnown: () => true }).signLeaf('default', 'web'),
    ).rejects.toMatchObject({
      code: 'CA_NO_SERVER',
    });
    expect(asked).toBe(1);
  });

  it('gives a client CA its leaves from the remote signer, and no way to sign or change the CA itself', async () => {
    const { manager, store, clock } = await caFixture();
    const channel = new MemoryChannel();
    serveSigningRequests(channel, manager, { datacenter: 'dc1', log: silentLogger, authorize: () => undefined });
    const remote = new RemoteLeafSource({ channel, datacenter: 'dc1', node: 'n1', keys: new LocalSigner() });
    const client = new ClientCa(new CaRecords(store, clock), remote);
    const leaf = await client.signLeaf('default', 'api');
    expect(channel.seen).toHaveLength(1);
    expect(leaf.signingKeyId).toBe(client.roots().roots[0]!.value.SigningKeyID);
    // A client CA has no signing of other agents' keys to offer: serveSigningRequests cannot be given one.
    expect('signPublicKey' in client).toBe(false);
    expect(() =>
      serveSigningRequests(
        new MemoryChannel(),
        // @ts-expect-error a client CA is not a SigningAuthority
        client,
        {
          datacenter: 'dc1',
          log: silentLogger,
          authorize: () => undefined,
        },
      ),
    ).not.toThrow();
    await expect(
      client.updateConfiguration({ provider: 'consul', config: {}, state: null, forceWithoutCrossSigning: false }),
    ).rejects.toMatchObject({ code: 'CA_SERVER_ONLY' });
  });
});
