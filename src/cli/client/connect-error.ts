// Why a request never got an answer, in words: Node's socket and TLS error codes said as Go's
// net, x509 and tls packages say them (the words a Consul user searches for), each with what to
// give the command when the fix is on its side. One line, never a stack.
import type { PeerCertificate } from 'node:tls';
import { agentError, type AgentError } from '../../core/errors.js';
import { goVerifyText } from '../../core/go-tls-text.js';
import type { Target } from './connection.js';

interface NodeNetError extends NodeJS.ErrnoException {
  readonly address?: string;
  readonly port?: number;
  readonly hostname?: string;
  readonly host?: string;
  readonly cert?: PeerCertificate;
}

// What to give the command, after Go's words.
const HINT = {
  untrusted:
    "the agent's certificate is not trusted: give the CA that signed it with -ca-file, -ca-path, CONSUL_CACERT or CONSUL_CAPATH",
  name: "the agent's certificate does not name the address: connect by a name it holds, or set -tls-server-name",
  noClientCert:
    'the agent requires a client certificate: give one with -client-cert and -client-key, or CONSUL_CLIENT_CERT and CONSUL_CLIENT_KEY',
  refused: 'the agent refused the client certificate: is it signed by a CA the agent trusts?',
  closedAfterHandshake:
    'the agent closed the connection right after the TLS handshake: it did not accept the client certificate; is it signed by a CA the agent trusts?',
  plainHttp: 'the agent serves plain HTTP there: use an http:// address',
  maybeHttps: 'if the agent serves HTTPS there, use an https:// address or CONSUL_HTTP_SSL=true',
  timeout: 'is the agent serving HTTPS at that address?',
} as const;

// The server's alert for a client certificate it did not take (TLS 1.2 and 1.3 spellings).
const CLIENT_CERT_REFUSED: Readonly<Record<string, string>> = {
  ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED: 'certificate required',
  ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE: 'handshake failure',
  ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE: 'bad certificate',
  ERR_SSL_TLSV1_ALERT_UNKNOWN_CA: 'unknown certificate authority',
  ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN: 'certificate unknown',
  ERR_SSL_TLSV1_ALERT_DECRYPT_ERROR: 'error decrypting message',
};

const SOCKET: Readonly<Record<string, string>> = {
  ECONNRESET: 'read: connection reset by peer',
  EPIPE: 'write: broken pipe',
  ETIMEDOUT: 'connect: connection timed out',
  EHOSTUNREACH: 'connect: no route to host',
  ENETUNREACH: 'connect: network is unreachable',
  EADDRNOTAVAIL: 'connect: cannot assign requested address',
};

/** The code api.ts gives a TLS handshake that did not finish in time. */
export const HANDSHAKE_TIMEOUT = 'SVC_TLS_HANDSHAKE_TIMEOUT';

/**
 * The error for a request to `target` that failed with `err` before an answer came; `handshook`:
 * the TLS handshake had completed on this side (TLS 1.3 ends it before the server checks the
 * client's certificate, and Node's server then closes without an alert).
 */
export function connectError(err: unknown, target: Target, handshook = false): AgentError {
  const e = err as NodeNetError;
  const code = e.code ?? '';
  const address = target.base;
  const tls = (reason: string): AgentError => agentError('CLI_TLS_FAILED', { address, reason });
  const net = (reason: string): AgentError => agentError('CLI_CONNECT_FAILED', { address, reason });
  const verify = goVerifyText(e);
  if (verify !== undefined) {
    if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return tls(`${verify} (${HINT.name})`);
    if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') return tls(`${verify} (${e.message})`);
    return tls(`${verify} (${HINT.untrusted})`);
  }
  const alert = CLIENT_CERT_REFUSED[code];
  if (alert !== undefined) {
    return tls(
      `remote error: tls: ${alert} (${target.tls?.hasClientCert === true ? HINT.refused : HINT.noClientCert})`,
    );
  }
  if (code === 'ERR_SSL_WRONG_VERSION_NUMBER' || code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG' || code === 'EPROTO') {
    return tls(`http: server gave HTTP response to HTTPS client (${HINT.plainHttp})`);
  }
  if (code === HANDSHAKE_TIMEOUT) return tls(`net/http: TLS handshake timeout (${HINT.timeout})`);
  if (code.startsWith('ERR_SSL_') || code.startsWith('ERR_TLS_'))
    return tls(`tls: ${(e as { reason?: string }).reason ?? e.message}`);
  if (code === 'ECONNREFUSED') return net(`dial tcp ${e.address ?? ''}:${e.port ?? ''}: connect: connection refused`);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return net(`dial tcp: lookup ${e.hostname ?? ''}: no such host`);
  if (code === 'ECONNRESET' && target.base.startsWith('http:')) {
    return net(`${SOCKET.ECONNRESET} (${HINT.maybeHttps})`);
  }
  if (code === 'ECONNRESET' && handshook && target.tls?.hasClientCert === true) {
    return tls(`${SOCKET.ECONNRESET} (${HINT.closedAfterHandshake})`);
  }
  return net(SOCKET[code] ?? (e.message || code));
}
