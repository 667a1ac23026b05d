// A certificate that failed verification, said as Go's crypto/tls and x509 packages say it: the
// words a Consul user searches for, in the CLI's errors and in HTTP checks' output alike.
import { isIP } from 'node:net';
import type { PeerCertificate } from 'node:tls';

/** What Node's TLS verification errors carry. */
export interface VerifyFailure {
  readonly code?: string | undefined;
  readonly host?: string | undefined;
  readonly cert?: PeerCertificate | undefined;
}

const VERIFY = 'tls: failed to verify certificate:';

// OpenSSL's verify results for a chain that ends at no trusted CA.
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
]);

/** Go's text for a failed certificate verification; undefined for any other error. */
export function goVerifyText(err: VerifyFailure): string | undefined {
  const code = err.code ?? '';
  if (UNTRUSTED.has(code)) return `${VERIFY} x509: certificate signed by unknown authority`;
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID')
    return `${VERIFY} x509: certificate has expired or is not yet valid`;
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') return `${VERIFY} ${hostnameError(err.host ?? '', err.cert)}`;
  return undefined;
}

/** Go's x509.HostnameError text for a certificate that does not name `host`. */
function hostnameError(host: string, cert: PeerCertificate | undefined): string {
  const names = (cert?.subjectaltname ?? '').split(', ').filter((n) => n !== '');
  const ips = names.filter((n) => n.startsWith('IP Address:')).map((n) => n.slice('IP Address:'.length));
  const dns = names.filter((n) => n.startsWith('DNS:')).map((n) => n.slice('DNS:'.length));
  if (isIP(host) !== 0) {
    if (ips.length === 0) return `x509: cannot validate certificate for ${host} because it doesn't contain any IP SANs`;
    return `x509: certificate is valid for ${ips.join(', ')}, not ${host}`;
  }
  if (dns.length === 0) return `x509: certificate is not valid for any names, but wanted to match ${host}`;
  return `x509: certificate is valid for ${dns.join(', ')}, not ${host}`;
}
