// Where and how the client commands reach the agent, as Consul's api package decides it: each
// setting from its flag, else its SVC_ variable, else its CONSUL_ one (an empty value is unset).
// The files (token, CA, client certificate) are read once, here, before anything is sent.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createSecureContext, type SecureContext } from 'node:tls';
import { agentError } from '../../core/errors.js';
import { goBool } from '../go-bool.js';

/** The connection flags every client command takes (Consul's HTTPFlags.ClientFlags). */
export interface ConnectionFlags {
  readonly httpAddr?: string | undefined;
  readonly token?: string | undefined;
  readonly tokenFile?: string | undefined;
  readonly caFile?: string | undefined;
  readonly caPath?: string | undefined;
  readonly clientCert?: string | undefined;
  readonly clientKey?: string | undefined;
  readonly tlsServerName?: string | undefined;
  readonly datacenter?: string | undefined;
}

export interface TlsClient {
  readonly context: SecureContext;
  /** The name the agent's certificate must hold instead of the address's host (-tls-server-name). */
  readonly serverName: string | undefined;
  /** False with CONSUL_HTTP_SSL_VERIFY=false: any certificate is taken. */
  readonly verify: boolean;
  /** Whether a client certificate is offered, for the words of a refused handshake. */
  readonly hasClientCert: boolean;
}

export interface Target {
  /** `http://127.0.0.1:8500`: a bare `host:port` gets `http://` (`https://` with CONSUL_HTTP_SSL=true). */
  readonly base: string;
  readonly token: string | undefined;
  /** Present when a TLS setting was given; an `https://` base without it uses the system's CAs. */
  readonly tls?: TlsClient | undefined;
  /** `?dc=` on every request (-datacenter). */
  readonly datacenter?: string | undefined;
}

/** The value of a setting: its flag, else `SVC_<name>`, else `CONSUL_<name>`; empty is unset. */
function setting(flag: string | undefined, env: NodeJS.ProcessEnv, name: string): string | undefined {
  for (const value of [flag, env[`SVC_${name}`], env[`CONSUL_${name}`]])
    if (value !== undefined && value !== '') return value;
  return undefined;
}

function envBool(env: NodeJS.ProcessEnv, name: string): boolean | undefined {
  for (const spelled of [`SVC_${name}`, `CONSUL_${name}`]) {
    const value = env[spelled];
    if (value === undefined || value === '') continue;
    const b = goBool(value);
    if (b === undefined) throw agentError('CLI_ENV_INVALID', { name: spelled, value });
    return b;
  }
  return undefined;
}

export function targetFrom(flags: ConnectionFlags, env: NodeJS.ProcessEnv): Target {
  const addr = setting(flags.httpAddr, env, 'HTTP_ADDR') ?? '127.0.0.1:8500';
  const ssl = envBool(env, 'HTTP_SSL') === true;
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(addr)?.[1];
  if (scheme !== undefined && scheme !== 'http' && scheme !== 'https')
    throw agentError('CLI_ADDRESS_SCHEME', { scheme });
  const hostPart = (scheme === undefined ? addr : addr.slice(scheme.length + 3)).replace(/\/+$/, '');
  // Consul never turns a requested https back into http: CONSUL_HTTP_SSL=true wins over http://.
  const base = `${scheme === 'https' || ssl ? 'https' : 'http'}://${hostPart}`;
  const tokenFile = setting(flags.tokenFile, env, 'HTTP_TOKEN_FILE');
  // A token file wins over a token when it holds one, as Consul's api.NewClient reads it.
  const fromFile = tokenFile === undefined ? undefined : readText(tokenFile, 'Error loading token file').trim();
  const token = fromFile !== undefined && fromFile !== '' ? fromFile : setting(flags.token, env, 'HTTP_TOKEN');
  const datacenter = flags.datacenter !== undefined && flags.datacenter !== '' ? flags.datacenter : undefined;
  return { base, token, tls: tlsClientFrom(flags, env), datacenter };
}

function tlsClientFrom(flags: ConnectionFlags, env: NodeJS.ProcessEnv): TlsClient | undefined {
  const caFile = setting(flags.caFile, env, 'CACERT');
  const caPath = setting(flags.caPath, env, 'CAPATH');
  const certFile = setting(flags.clientCert, env, 'CLIENT_CERT');
  const keyFile = setting(flags.clientKey, env, 'CLIENT_KEY');
  const serverName = setting(flags.tlsServerName, env, 'TLS_SERVER_NAME');
  const verify = envBool(env, 'HTTP_SSL_VERIFY') !== false;
  if ([caFile, caPath, certFile, keyFile, serverName].every((v) => v === undefined) && verify) return undefined;
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw agentError('CLI_TLS_SETUP', { detail: 'both client cert and client key must be provided' });
  }
  // A CA file wins over a CA directory, as go-rootcerts loads them.
  const ca =
    caFile !== undefined
      ? [caPem(caFile, 'Error loading CA File')]
      : caPath !== undefined
        ? caDirectory(caPath)
        : undefined;
  const cert = certFile === undefined ? undefined : readText(certFile, 'Error loading client certificate');
  const key = keyFile === undefined ? undefined : readText(keyFile, 'Error loading client key');
  if (cert !== undefined && !cert.includes('-----BEGIN')) {
    throw agentError('CLI_TLS_SETUP', { detail: `tls: failed to find any PEM data in certificate input: ${certFile}` });
  }
  if (key !== undefined && !key.includes('-----BEGIN')) {
    throw agentError('CLI_TLS_SETUP', { detail: `tls: failed to find any PEM data in key input: ${keyFile}` });
  }
  let context: SecureContext;
  try {
    context = createSecureContext({
      ...(ca === undefined ? {} : { ca }),
      ...(cert === undefined ? {} : { cert, key }),
    });
  } catch (err) {
    const mismatch = /key values mismatch/.test((err as Error).message);
    const detail = mismatch ? 'tls: private key does not match public key' : `tls: ${(err as Error).message}`;
    throw agentError('CLI_TLS_SETUP', { detail: `${detail} (${certFile ?? caFile ?? caPath})` });
  }
  return { context, serverName, verify, hasClientCert: cert !== undefined };
}

function caPem(path: string, what: string): string {
  const pem = readText(path, what);
  if (!pem.includes('-----BEGIN CERTIFICATE-----'))
    throw agentError('CLI_TLS_SETUP', { detail: `${what}: Couldn't parse PEM in: ${path}` });
  return pem;
}

/** Every file under the directory, each of which must hold a PEM certificate (go-rootcerts' LoadCAPath). */
function caDirectory(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir, { recursive: true, encoding: 'utf8' });
  } catch (err) {
    throw unreadable(err, dir, 'Error loading CA Path');
  }
  return names
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile())
    .sort()
    .map((path) => caPem(path, 'Error loading CA Path'));
}

/** A file's text, or CLI_FILE_UNREADABLE in Go's words (`open PATH: no such file or directory`). */
export function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw unreadable(err, path, what);
  }
}

const GO_ERRNO: Readonly<Record<string, string>> = {
  ENOENT: 'no such file or directory',
  EACCES: 'permission denied',
  EISDIR: 'is a directory',
  ENOTDIR: 'not a directory',
  ELOOP: 'too many levels of symbolic links',
};

export function unreadable(err: unknown, path: string, what: string): Error {
  const code = (err as NodeJS.ErrnoException).code ?? '';
  return agentError('CLI_FILE_UNREADABLE', { what, path, reason: GO_ERRNO[code] ?? (code || String(err)) });
}
