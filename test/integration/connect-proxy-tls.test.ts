// What the proxy's public listener admits, asked with `openssl s_client` as an outside client would:
// a leaf of the mesh for an allowed service gets through to the application; a leaf from another
// CA, an expired one, one without a URI SAN, one of another trust domain, and no client
// certificate at all are refused, and the application sees none of them. A client that never
// finishes its handshake is cut at the registration's handshake_timeout_ms. The mesh's root is
// supplied (connect.ca_config), so the test can forge leaves it signed (@peculiar/x509, an encoder
// independent of the agent's).
import 'reflect-metadata';
import * as px from '@peculiar/x509';
import { spawn, type ChildProcess } from 'node:child_process';
import { webcrypto } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { freePort, startProxy } from './support/proxy-process.js';

px.cryptoProvider.set(webcrypto as unknown as Parameters<typeof px.cryptoProvider.set>[0]);

const TRUST_DOMAIN = '7c4e2a10-0000-4000-8000-00000000cafe.consul';
const DAY = 86_400_000;
const HANDSHAKE_TIMEOUT_MS = 400;
const EC = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

type Keys = webcrypto.CryptoKeyPair;
const newKeys = (): Promise<Keys> => webcrypto.subtle.generateKey(EC, true, ['sign', 'verify']) as Promise<Keys>;
const keyPem = async (keys: Keys): Promise<string> =>
  px.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey), 'PRIVATE KEY');
const webUri = (trustDomain: string): string => `spiffe://${trustDomain}/ns/default/dc/dc1/svc/web`;
let serial = 1;

async function makeRoot(trustDomain: string): Promise<{ cert: px.X509Certificate; keys: Keys }> {
  const keys = await newKeys();
  const cert = await px.X509CertificateGenerator.createSelfSigned({
    serialNumber: (serial++).toString(16).padStart(2, '0'),
    name: `CN=Test Root ${trustDomain}`,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + 365 * DAY),
    keys,
    signingAlgorithm: EC,
    extensions: [
      new px.BasicConstraintsExtension(true, undefined, true),
      new px.KeyUsagesExtension(px.KeyUsageFlags.keyCertSign | px.KeyUsageFlags.cRLSign, true),
      new px.SubjectAlternativeNameExtension([{ type: 'url', value: `spiffe://${trustDomain}` }]),
      await px.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert, keys };
}

/** A client leaf signed by `issuer`: `uri` its one URI SAN (none when undefined). */
async function makeLeaf(
  issuer: { cert: px.X509Certificate; keys: Keys },
  uri: string | undefined,
  validity: { from: number; to: number } = { from: Date.now() - DAY, to: Date.now() + DAY },
): Promise<{ cert: string; key: string }> {
  const keys = await newKeys();
  const cert = await px.X509CertificateGenerator.create({
    serialNumber: (serial++).toString(16).padStart(2, '0'),
    subject: 'CN=web',
    issuer: issuer.cert.subject,
    notBefore: new Date(validity.from),
    notAfter: new Date(validity.to),
    publicKey: keys.publicKey,
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: EC,
    extensions: [
      new px.BasicConstraintsExtension(false, undefined, true),
      new px.KeyUsagesExtension(px.KeyUsageFlags.digitalSignature | px.KeyUsageFlags.keyEncipherment, true),
      new px.ExtendedKeyUsageExtension([px.ExtendedKeyUsage.clientAuth, px.ExtendedKeyUsage.serverAuth]),
      new px.SubjectAlternativeNameExtension(
        uri === undefined ? [{ type: 'dns', value: 'web.example' }] : [{ type: 'url', value: uri }],
      ),
      await px.AuthorityKeyIdentifierExtension.create(issuer.keys.publicKey),
    ],
  });
  return { cert: cert.toString('pem'), key: await keyPem(keys) };
}

describe('the proxy public listener, asked with openssl s_client', () => {
  let dir: string;
  let agent: AgentProcess;
  let app: Server;
  let accepted = 0;
  let listenPort: number;
  let proxy: ChildProcess;
  let root: { cert: px.X509Certificate; keys: Keys };
  const files: Record<string, { cert: string; key: string }> = {};

  const saveLeaf = async (name: string, leaf: { cert: string; key: string }): Promise<void> => {
    files[name] = { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
    await writeFile(files[name].cert, leaf.cert);
    await writeFile(files[name].key, leaf.key, { mode: 0o600 });
  };

  /**
   * Connects with s_client (verifying the proxy against the mesh's roots), sends a line, and says
   * whether the application's echo came back before the connection ended.
   */
  const echoed = async (leaf: string | undefined): Promise<boolean> => {
    const args = ['s_client', '-connect', `127.0.0.1:${listenPort}`, '-CAfile', join(dir, 'roots.pem')];
    if (leaf !== undefined) args.push('-cert', files[leaf]!.cert, '-key', files[leaf]!.key);
    const child = spawn('openssl', [...args, '-verify_return_error', '-quiet'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    const marker = `hello-${serial++}`;
    child.stdin.write(`${marker}\n`);
    return new Promise((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes(marker)) {
          child.kill();
          resolve(true);
        }
      });
      child.once('exit', () => resolve(out.includes(marker)));
    });
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-proxy-tls-'));
    root = await makeRoot(TRUST_DOMAIN);
    agent = await startAgent({
      config: {
        connect: {
          trust_domain: TRUST_DOMAIN,
          ca_config: { root_cert: root.cert.toString('pem'), private_key: await keyPem(root.keys) },
        },
      },
    });
    app = createServer((socket) => {
      accepted++;
      socket.pipe(socket);
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    listenPort = await freePort();
    const put = async (path: string, body: unknown): Promise<Response> => {
      const res = await fetch(`${agent.url}${path}`, { method: 'PUT', body: JSON.stringify(body) });
      expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
      return res;
    };
    await put('/v1/agent/service/register', {
      Name: 'db',
      Port: (app.address() as AddressInfo).port,
      Connect: {
        SidecarService: {
          Port: listenPort,
          Checks: [{ Name: 'proxy up', TTL: '1h', Status: 'passing' }],
          Proxy: { Config: { bind_address: '127.0.0.1', handshake_timeout_ms: HANDSHAKE_TIMEOUT_MS } },
        },
      },
    });
    await put('/v1/connect/intentions/exact?source=web&destination=db', { Action: 'allow' });
    const roots = (await (await fetch(`${agent.url}/v1/agent/connect/ca/roots`)).json()) as {
      Roots: { RootCert: string; IntermediateCerts: string[] | null }[];
    };
    await writeFile(join(dir, 'roots.pem'), roots.Roots.map((r) => r.RootCert).join('\n'));
    const leaf = (await (await fetch(`${agent.url}/v1/agent/connect/ca/leaf/web`)).json()) as {
      CertPEM: string;
      PrivateKeyPEM: string;
    };
    await saveLeaf('allowed', { cert: leaf.CertPEM, key: leaf.PrivateKeyPEM });
    await saveLeaf('other-ca', await makeLeaf(await makeRoot(TRUST_DOMAIN), webUri(TRUST_DOMAIN)));
    await saveLeaf(
      'expired',
      await makeLeaf(root, webUri(TRUST_DOMAIN), { from: Date.now() - 3 * DAY, to: Date.now() - DAY }),
    );
    await saveLeaf('no-uri', await makeLeaf(root, undefined));
    await saveLeaf('other-trust-domain', await makeLeaf(root, webUri('11111111-2222-4333-8444-555555555555.consul')));

    proxy = (await startProxy(agent, 'db')).child;
  });
  afterAll(async () => {
    proxy?.kill('SIGKILL');
    app?.close();
    await agent?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('lets a leaf of the mesh for an allowed service through to the application', async () => {
    expect(await echoed('allowed')).toBe(true);
    expect(accepted).toBe(1);
  });

  it.each(['other-ca', 'expired', 'no-uri', 'other-trust-domain', undefined])(
    'refuses a client with %s leaf, the application seeing nothing',
    async (leaf) => {
      const before = accepted;
      expect(await echoed(leaf)).toBe(false);
      expect(accepted).toBe(before);
    },
  );

  it('cuts a client that never finishes its handshake at handshake_timeout_ms', async () => {
    const socket = connect(listenPort, '127.0.0.1');
    await once(socket, 'connect');
    const opened = Date.now();
    await once(socket, 'close');
    // Never before the timeout (the test's own timeout bounds it from above).
    expect(Date.now() - opened).toBeGreaterThanOrEqual(HANDSHAKE_TIMEOUT_MS - 5);
  });
});
