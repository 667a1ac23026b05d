// Mutual TLS between two services with leaves and roots from the agent API (node:tls): both sides
// verify the peer's chain and read its SPIFFE ID. Shared by the single-agent and cluster CA tests.
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { connect, createServer, type PeerCertificate, type TLSSocket } from 'node:tls';

export interface Root {
  ID: string;
  RootCert: string;
  SigningKeyID: string;
  Active: boolean;
  IntermediateCerts: string[] | null;
}
export interface Roots {
  ActiveRootID: string;
  TrustDomain: string;
  Roots: Root[];
}
export interface Leaf {
  SerialNumber: string;
  CertPEM: string;
  PrivateKeyPEM: string;
  Service: string;
  ServiceURI: string;
  ModifyIndex: number;
}

/** The peer's SPIFFE ID: the one URI SAN of its leaf. */
export function uriOf(cert: PeerCertificate | X509Certificate): string {
  const san = cert instanceof X509Certificate ? cert.subjectAltName : cert.subjectaltname;
  return (san ?? '').replace(/^URI:/, '');
}

/** What a side of the handshake needs of its leaf. */
export type LeafKeys = Pick<Leaf, 'CertPEM' | 'PrivateKeyPEM' | 'ServiceURI'>;

export interface Handshake {
  readonly serverSaw: string;
  readonly clientSaw: string;
  readonly echoed: string;
}

/**
 * One mutual-TLS exchange: `server` listens with its leaf and trusts `serverCa`; `client`
 * connects with its leaf and trusts `clientCa`. Both sides verify the peer chain and read the
 * peer's SPIFFE ID (there are no DNS names in mesh leaves, so hostname checks are replaced).
 */
export async function handshake(
  server: LeafKeys,
  serverCa: string[],
  client: LeafKeys,
  clientCa: string[],
): Promise<Handshake> {
  let serverSaw = '';
  const tlsServer = createServer(
    { key: server.PrivateKeyPEM, cert: server.CertPEM, ca: serverCa, requestCert: true, rejectUnauthorized: true },
    (socket) => {
      serverSaw = uriOf(socket.getPeerCertificate());
      socket.pipe(socket);
    },
  );
  tlsServer.listen(0, '127.0.0.1');
  await once(tlsServer, 'listening');
  try {
    const socket: TLSSocket = connect({
      host: '127.0.0.1',
      port: (tlsServer.address() as AddressInfo).port,
      key: client.PrivateKeyPEM,
      cert: client.CertPEM,
      ca: clientCa,
      rejectUnauthorized: true,
      checkServerIdentity: (_host, cert) =>
        uriOf(cert) === server.ServiceURI ? undefined : new Error(`unexpected peer ${uriOf(cert)}`),
    });
    await once(socket, 'secureConnect');
    const clientSaw = uriOf(socket.getPeerCertificate());
    socket.write('ping');
    const [data] = (await once(socket, 'data')) as [Buffer];
    socket.end();
    return { serverSaw, clientSaw, echoed: data.toString() };
  } finally {
    tlsServer.close();
  }
}

/** Resolves with the TLS error the client sees, or throws if the handshake succeeds. */
export async function handshakeError(
  server: Leaf,
  serverCa: string[],
  client: Leaf,
  clientCa: string[],
): Promise<string> {
  try {
    await handshake(server, serverCa, client, clientCa);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  }
  throw new Error('handshake succeeded');
}
