// Service names that need percent-encoding in a leaf's SPIFFE ID (issue #40): the URI holds
// `a%20b`, the name asked for is `a b`. Both ends compare the name decoded: the client takes the
// server's answer for such a name, and the server refuses a name its URI would not name before it
// takes a serial.
import type { Mailbox } from '../../../../src/core/mailbox.js';
import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { namesService, RemoteLeafSource, serveSigningRequests } from '../../../../src/connect/ca/remote-signer.js';
import { LocalSigner } from '../../../../src/connect/ca/signer.js';
import { CA_TABLE, SERIAL_KEY } from '../../../../src/connect/ca/model.js';
import { silentLogger } from '../../../../src/core/log.js';
import { caFixture } from './support.js';

/** Requests go straight to the one handler served, each counted. */
class MemoryChannel implements Mailbox {
  handler: ((body: unknown) => Promise<unknown>) | undefined;
  requests = 0;
  async request(body: unknown): Promise<unknown> {
    this.requests++;
    return this.handler === undefined ? undefined : JSON.parse(JSON.stringify(await this.handler(body)));
  }
  serve(handler: (body: unknown) => Promise<unknown>): void {
    this.handler = handler;
  }
}

const TD = 'spiffe://11111111-2222-3333-4444-555555555555.consul/ns/default/dc/dc1/svc';

describe('namesService', () => {
  it.each([
    [`${TD}/web`, 'web'],
    [`${TD}/a%20b`, 'a b'],
    [`${TD}/caf%C3%A9`, 'café'],
    [`${TD}/a%25b`, 'a%b'],
    [`${TD}/a%2Fb`, 'a/b'],
  ])('reads %s as naming %j', (uri, service) => {
    expect(namesService(uri, service)).toBe(true);
  });

  it('compares the decoded name, never the encoded text or a suffix of it', () => {
    expect(namesService(`${TD}/a%20b`, 'a%20b')).toBe(false);
    expect(namesService(`${TD}/a%2520b`, 'a%20b')).toBe(true);
    expect(namesService(`${TD}/a%25b`, 'a%b')).toBe(true);
    expect(namesService(`${TD}/a%25b`, 'a%25b')).toBe(false);
    expect(namesService(`${TD}/xweb`, 'web')).toBe(false);
    expect(namesService(`${TD}/web`, 'we')).toBe(false);
    // Not a service ID, or a bad escape: it names no service.
    expect(namesService('spiffe://td/agent/client/dc/dc1/id/web', 'web')).toBe(false);
    expect(namesService(`${TD}/a%zzb`, 'a%zzb')).toBe(false);
  });
});

describe('a leaf for a name that needs percent-encoding, signed by a server for a client', () => {
  it.each([
    ['a b', 'a%20b'],
    ['café', 'caf%C3%A9'],
    ['a%b', 'a%25b'],
  ])('%j: the client takes the answer, whose URI SAN holds %s', async (service, encoded) => {
    const { manager } = await caFixture();
    const channel = new MemoryChannel();
    serveSigningRequests(channel, manager, { datacenter: 'dc1', log: silentLogger, authorize: () => undefined });
    const client = new RemoteLeafSource({ channel, datacenter: 'dc1', node: 'n1', keys: new LocalSigner() });
    const leaf = await client.signLeaf('default', service);
    const uri = `spiffe://${manager.trustDomain}/ns/default/dc/dc1/svc/${encoded}`;
    expect(leaf.uri).toBe(uri);
    expect(new X509Certificate(leaf.certPem).subjectAltName).toBe(`URI:${uri}`);
    expect(channel.requests).toBe(1);
  });

  it('is refused by the server before a serial is taken when its URI would not name it', async () => {
    const { manager, store } = await caFixture();
    const channel = new MemoryChannel();
    serveSigningRequests(channel, manager, { datacenter: 'dc1', log: silentLogger, authorize: () => undefined });
    const client = new RemoteLeafSource({ channel, datacenter: 'dc1', node: 'n1', keys: new LocalSigner() });
    await client.signLeaf('default', 'web');
    const serial = store.get(CA_TABLE, SERIAL_KEY);
    // A lone surrogate has no UTF-8 form: its URI would name U+FFFD. An empty name gives no segment.
    for (const name of ['a\ud800b', '']) {
      await expect(client.signLeaf('default', name)).rejects.toMatchObject({
        code: 'CA_BAD_CSR',
        message: expect.stringContaining('does not name service'),
      });
    }
    expect(store.get(CA_TABLE, SERIAL_KEY)).toEqual(serial);
  });
});
