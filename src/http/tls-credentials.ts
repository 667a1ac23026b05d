// The HTTPS API's credentials: reads the tls.defaults files and checks them by building a secure
// context, so a missing file, a non-PEM file or a key that does not match its certificate is
// refused with the file named, at start-up and on reload (the running context stays then).
import { readFile } from 'node:fs/promises';
import { createSecureContext, type SecureVersion } from 'node:tls';
import { agentError } from '../core/errors.js';
import { describeFsError } from '../core/error-text.js';
import type { TlsConfig, TlsVersionName } from '../config/types.js';

/** What node:https takes, ready for `createServer` and `setSecureContext`. */
export interface TlsServerCredentials {
  readonly key: Buffer;
  readonly cert: Buffer;
  readonly ca: Buffer | undefined;
  readonly requestCert: boolean;
  readonly rejectUnauthorized: boolean;
  readonly minVersion: SecureVersion;
  /** Set below TLS 1.2 only: OpenSSL's default security level refuses TLS 1.0 and 1.1 whatever the minimum says. */
  readonly ciphers: string | undefined;
}

const VERSIONS: Readonly<Record<TlsVersionName, SecureVersion>> = {
  TLSv1_0: 'TLSv1',
  TLSv1_1: 'TLSv1.1',
  TLSv1_2: 'TLSv1.2',
  TLSv1_3: 'TLSv1.3',
};

export async function readTlsCredentials(tls: TlsConfig): Promise<TlsServerCredentials> {
  const cert = await readPem('cert_file', tls.certFile);
  const key = await readPem('key_file', tls.keyFile);
  const ca = tls.caFile === undefined ? undefined : await readPem('ca_file', tls.caFile);
  const credentials: TlsServerCredentials = {
    key,
    cert,
    ca,
    requestCert: tls.verifyIncoming,
    rejectUnauthorized: tls.verifyIncoming,
    minVersion: VERSIONS[tls.minVersion],
    ciphers: tls.minVersion === 'TLSv1_0' || tls.minVersion === 'TLSv1_1' ? 'DEFAULT:@SECLEVEL=0' : undefined,
  };
  try {
    createSecureContext(contextOptions(credentials));
  } catch (err) {
    throw agentError('TLS_FILES_INVALID', {
      detail: `${tls.certFile} with ${tls.keyFile}${tls.caFile === undefined ? '' : ` and ${tls.caFile}`}: ${describe(err)}`,
    });
  }
  return credentials;
}

/** The subset `setSecureContext` and `createSecureContext` take. */
export function contextOptions(c: TlsServerCredentials): {
  key: Buffer;
  cert: Buffer;
  ca?: Buffer;
  minVersion: SecureVersion;
  ciphers?: string;
} {
  return {
    key: c.key,
    cert: c.cert,
    minVersion: c.minVersion,
    ...(c.ca === undefined ? {} : { ca: c.ca }),
    ...(c.ciphers === undefined ? {} : { ciphers: c.ciphers }),
  };
}

async function readPem(name: string, path: string | undefined): Promise<Buffer> {
  if (path === undefined) throw agentError('TLS_FILES_INVALID', { detail: `tls.defaults.${name} is not set` });
  let buf: Buffer;
  try {
    buf = await readFile(path);
  } catch (err) {
    throw agentError('TLS_FILES_INVALID', { detail: `tls.defaults.${name} ${path}: ${describeFsError(err)}` });
  }
  if (!buf.includes('-----BEGIN '))
    throw agentError('TLS_FILES_INVALID', { detail: `tls.defaults.${name} ${path}: not a PEM file` });
  return buf;
}

/** OpenSSL's reason, without its numeric prefix (`error:05800074:x509 certificate routines::`). */
function describe(err: unknown): string {
  const code = (err as { code?: unknown }).code;
  if (code === 'ERR_OSSL_X509_KEY_VALUES_MISMATCH') return 'the private key does not match the certificate';
  const message = err instanceof Error ? err.message : String(err);
  const reason = message.replace(/^error:[0-9A-Fa-f]+:[^:]*::?/, '');
  return typeof code === 'string' && !reason.includes(code) ? `${code}: ${reason}` : reason;
}
