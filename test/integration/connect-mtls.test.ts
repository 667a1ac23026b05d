// The CA does its job: two services prove who they are to each other over mutual TLS (node:tls)
// with leaves and roots fetched from the API, before and after a root rotation, including a client
// that still holds only the old roots and one that holds only the new roots.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { handshake, handshakeError, type Leaf, type Roots } from './support/mtls.js';

describe('mutual TLS with the CA', () => {
  let agent: AgentProcess;
  const api = async <T>(path: string, init?: RequestInit): Promise<T> => {
    const res = await fetch(`${agent.url}${path}`, init);
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    const text = await res.text();
    return (text === '' ? undefined : JSON.parse(text)) as T;
  };

  beforeAll(async () => {
    agent = await startAgent({
      config: { connect: { leaf_root_change_spread: '0s', ca_config: { csr_max_per_second: 0 } } },
    });
  });
  afterAll(() => agent.stop());

  it('authenticates both services before and after a rotation, whichever roots the client holds', async () => {
    const before = await api<Roots>('/v1/agent/connect/ca/roots');
    const oldRoots = before.Roots.map((r) => r.RootCert);
    const web = await api<Leaf>('/v1/agent/connect/ca/leaf/web');
    const api1 = await api<Leaf>('/v1/agent/connect/ca/leaf/api');

    const first = await handshake(web, oldRoots, api1, oldRoots);
    expect(first).toEqual({ serverSaw: api1.ServiceURI, clientSaw: web.ServiceURI, echoed: 'ping' });

    // Rotate to a new key type; wait for the new leaves as a proxy would (blocking on its index).
    await api('/v1/connect/ca/configuration', {
      method: 'PUT',
      body: JSON.stringify({
        Provider: 'consul',
        Config: { PrivateKeyType: 'ec', PrivateKeyBits: 384, CSRMaxPerSecond: 0 },
      }),
    });
    const web2 = await api<Leaf>(`/v1/agent/connect/ca/leaf/web?index=${web.ModifyIndex}&wait=10s`);
    const api2 = await api<Leaf>(`/v1/agent/connect/ca/leaf/api?index=${api1.ModifyIndex}&wait=10s`);
    expect(web2.ModifyIndex).toBeGreaterThan(web.ModifyIndex);
    const after = await api<Roots>('/v1/agent/connect/ca/roots');
    expect(after.Roots).toHaveLength(2);
    const allRoots = after.Roots.map((r) => r.RootCert);
    const newRoots = after.Roots.filter((r) => r.Active).map((r) => r.RootCert);
    expect(newRoots).toHaveLength(1);
    expect(oldRoots).not.toContain(newRoots[0]);

    // Server with the full bundle; a client that only knows the old root (the cross-signed
    // intermediate in the leaf's chain bridges it), and one that only knows the new root.
    expect(await handshake(web2, allRoots, api2, oldRoots)).toEqual({
      serverSaw: api2.ServiceURI,
      clientSaw: web2.ServiceURI,
      echoed: 'ping',
    });
    expect(await handshake(web2, allRoots, api2, newRoots)).toEqual({
      serverSaw: api2.ServiceURI,
      clientSaw: web2.ServiceURI,
      echoed: 'ping',
    });
    // And the other way round: servers holding only one root accept the new client leaf.
    expect((await handshake(web2, oldRoots, api2, allRoots)).serverSaw).toBe(api2.ServiceURI);
    expect((await handshake(web2, newRoots, api2, allRoots)).serverSaw).toBe(api2.ServiceURI);
    // During the change an old leaf still works against the bundle the API now serves.
    expect((await handshake(web, allRoots, api2, allRoots)).clientSaw).toBe(web.ServiceURI);
  });

  it('fails the handshake for a leaf the client does not trust', async () => {
    const web = await api<Leaf>('/v1/agent/connect/ca/leaf/web');
    const client = await api<Leaf>('/v1/agent/connect/ca/leaf/api');
    const roots = await api<Roots>('/v1/agent/connect/ca/roots');
    // A bare leaf without its chain, checked against the old root only: nothing bridges it.
    const bare: Leaf = { ...web, CertPEM: web.CertPEM.slice(0, web.CertPEM.indexOf('-----END CERTIFICATE-----') + 26) };
    const oldOnly = roots.Roots.filter((r) => !r.Active).map((r) => r.RootCert);
    expect(oldOnly.length).toBeGreaterThan(0);
    const code = await handshakeError(
      bare,
      roots.Roots.map((r) => r.RootCert),
      client,
      oldOnly,
    );
    expect(['UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'SELF_SIGNED_CERT_IN_CHAIN']).toContain(code);
    // With its chain the same leaf is accepted by the same client.
    expect(
      (
        await handshake(
          web,
          roots.Roots.map((r) => r.RootCert),
          client,
          oldOnly,
        )
      ).clientSaw,
    ).toBe(web.ServiceURI);
  });
});
