// Throwaway PKI for the HTTPS tests, made with the openssl CLI: a CA, a server certificate for
// 127.0.0.1/localhost, a client certificate from the same CA and one from an unrelated CA.
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TlsFiles {
  readonly dir: string;
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
  /** A client certificate signed by another CA. */
  readonly strangerCertFile: string;
  readonly strangerKeyFile: string;
  /** A second server certificate from the same CA, for reload tests. */
  readonly nextCertFile: string;
  readonly nextKeyFile: string;
  remove(): Promise<void>;
}

export async function makeTlsFiles(): Promise<TlsFiles> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-tls-'));
  const at = (name: string): string => join(dir, name);
  const openssl = (...args: string[]): void => {
    execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  };
  const ca = (name: string): void => {
    openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
    );
  };
  const issue = (name: string, issuer: string, cn: string): void => {
    openssl(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      `/CN=${cn}`,
    );
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${issuer}.pem`,
      '-CAkey',
      `${issuer}.key`,
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
  };
  await writeFile(at('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  await writeFile(at('next.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n');
  await writeFile(at('client.ext'), 'extendedKeyUsage=clientAuth\n');
  await writeFile(at('stranger.ext'), 'extendedKeyUsage=clientAuth\n');
  ca('ca');
  ca('other-ca');
  issue('server', 'ca', 'server.svc');
  issue('next', 'ca', 'next.svc');
  issue('client', 'ca', 'client.svc');
  issue('stranger', 'other-ca', 'stranger.svc');
  return {
    dir,
    caFile: at('ca.pem'),
    certFile: at('server.pem'),
    keyFile: at('server.key'),
    clientCertFile: at('client.pem'),
    clientKeyFile: at('client.key'),
    strangerCertFile: at('stranger.pem'),
    strangerKeyFile: at('stranger.key'),
    nextCertFile: at('next.pem'),
    nextKeyFile: at('next.key'),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
