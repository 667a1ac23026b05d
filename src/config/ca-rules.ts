// Consul's checks of a built-in CA configuration (CommonCAProviderConfig.Validate), as a pure
// function over milliseconds. Messages are Consul's texts, since operators search for them; unlike
// Consul, every broken rule is reported, not only the first.
import { formatDuration } from '../core/duration.js';

export interface CaRulesInput {
  readonly leafCertTtlMs: number;
  readonly intermediateCertTtlMs: number;
  readonly rootCertTtlMs: number;
  readonly privateKeyType: 'ec' | 'rsa';
  readonly privateKeyBits: number;
  readonly privateKey: string | undefined;
  readonly rootCert: string | undefined;
}

/** A broken rule: `field` is the ca_config key it is reported against, `involves` all it read. */
export interface CaProblem {
  readonly field: string;
  readonly involves: readonly string[];
  readonly message: string;
}

const HOUR_MS = 3_600_000;
export const MIN_LEAF_CERT_TTL_MS = HOUR_MS;
export const MAX_LEAF_CERT_TTL_MS = 8760 * HOUR_MS;
/** Intermediates are checked hourly and renewed past half-life; 3h leaves 30 min to renew. */
const MIN_INTERMEDIATE_CERT_TTL_MS = 3 * HOUR_MS;

const EC_BITS: readonly number[] = [224, 256, 384, 521];
const RSA_BITS: readonly number[] = [2048, 4096];

export function caConfigProblems(c: CaRulesInput): CaProblem[] {
  const problems: CaProblem[] = [];
  const add = (field: string, message: string, others: readonly string[] = []): void => {
    problems.push({ field, involves: [field, ...others], message });
  };
  if (c.rootCertTtlMs < c.intermediateCertTtlMs) {
    const root = formatDuration(c.rootCertTtlMs);
    const intermediate = formatDuration(c.intermediateCertTtlMs);
    add(
      'root_cert_ttl',
      'root cert TTL is set and is not greater than intermediate cert ttl. ' +
        `root cert ttl: ${root}, intermediate cert ttl: ${intermediate}`,
      ['intermediate_cert_ttl'],
    );
  }
  if (c.leafCertTtlMs < MIN_LEAF_CERT_TTL_MS) {
    add('leaf_cert_ttl', `leaf cert TTL must be greater or equal than ${formatDuration(MIN_LEAF_CERT_TTL_MS)}`);
  }
  if (c.leafCertTtlMs > MAX_LEAF_CERT_TTL_MS) {
    add('leaf_cert_ttl', `leaf cert TTL must be less than ${formatDuration(MAX_LEAF_CERT_TTL_MS)}`);
  }
  if (c.intermediateCertTtlMs < MIN_INTERMEDIATE_CERT_TTL_MS) {
    add('intermediate_cert_ttl', 'Intermediate Cert TTL must be greater or equal than 3h');
  } else if (c.intermediateCertTtlMs < 3 * c.leafCertTtlMs) {
    // Intermediates travel with leaves, so one must outlive several leaf renewals.
    add(
      'intermediate_cert_ttl',
      `Intermediate Cert TTL must be greater or equal than 3 * LeafCertTTL (>=${formatDuration(3 * c.leafCertTtlMs)}).`,
      ['leaf_cert_ttl'],
    );
  }
  if (c.privateKeyType === 'ec' && !EC_BITS.includes(c.privateKeyBits)) {
    add('private_key_bits', 'EC key length must be one of (224, 256, 384, 521) bits', ['private_key_type']);
  }
  if (c.privateKeyType === 'rsa' && !RSA_BITS.includes(c.privateKeyBits)) {
    add('private_key_bits', 'RSA key length must be 2048 or 4096 bits', ['private_key_type']);
  }
  if (c.rootCert !== undefined && c.privateKey === undefined) {
    add('private_key', 'must provide a private key when providing a root cert', ['root_cert']);
  }
  return problems;
}

/** Consul defaults bits to 256 whatever the type, which makes `rsa` alone invalid; we pick per type. */
export function defaultKeyBits(type: 'ec' | 'rsa'): number {
  return type === 'rsa' ? 2048 : 256;
}
