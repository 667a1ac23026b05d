// The connection-authorization decision (reference §3.2-§3.6), pure and synchronous: check the
// request (Target, then the client's SPIFFE ID), find the destination's precedence-sorted
// intentions in the index, take the first whose source matches, and answer with Consul's reason.
// A deny is a normal result with a reason, not an error. Every possible answer is built ahead of
// time with its JSON bytes (decision.ts), so deciding allocates nothing. The ACL step (service:write on Target) is the caller's: the HTTP guard or
// the embedding agent. Guarded by bench/micro/authorize.ts.
import { invalid } from '../core/errors.js';
import { destinationIntentions, firstSourceMatch, type IntentionIndex } from './intentions/index.js';
import { DEFAULT_ALLOW, DEFAULT_DENY, type Decision } from './decision.js';
import { parseSpiffeId, type SpiffeService } from './spiffe.js';

export { DEFAULT_ALLOW, DEFAULT_DENY, type AuthorizeResult, type Decision } from './decision.js';

export interface AuthorizeRequest {
  readonly Target: string;
  readonly ClientCertURI: string;
  /** Accepted and ignored, as in Consul: the proxy has already verified the certificate. */
  readonly ClientCertSerial?: string;
  readonly Namespace?: string;
}

/**
 * Steps 4-6 of §3.2: the Target, then the client URI as a SPIFFE ID, then that it names a
 * service. Step 9's partition check follows (the target partition is always `default`).
 */
export function checkAuthorizeRequest(target: string, clientCertUri: string): SpiffeService {
  if (target === '') throw invalid('AUTHORIZE_NO_TARGET', 'Target service must be specified');
  const parsed = parseSpiffeId(clientCertUri);
  if (!parsed.ok) throw invalid('AUTHORIZE_BAD_URI', 'ClientCertURI not a valid Connect identifier');
  const id = parsed.id;
  if (id.kind !== 'service') throw invalid('AUTHORIZE_NOT_SERVICE', 'ClientCertURI not a valid Service identifier');
  return id;
}

/** Step 9: partitions are out of scope, so a client from any other partition is refused. */
export function checkPartition(source: SpiffeService): void {
  if (source.partition !== 'default') {
    throw invalid('AUTHORIZE_PARTITION', `Mismatched partitions: ${JSON.stringify(source.partition)} != "default"`);
  }
}

/**
 * Steps 10-13: the first intention by precedence whose source matches the client wins; with none,
 * the default (`defaultAllow`: ACLs off, or acl.default_policy = allow).
 */
export function decide(index: IntentionIndex, targetNamespace: string, target: string, source: SpiffeService, defaultAllow: boolean): Decision {
  const match = firstSourceMatch(destinationIntentions(index, targetNamespace, target), source.namespace, source.service);
  if (match !== undefined) return match.decision;
  return defaultAllow ? DEFAULT_ALLOW : DEFAULT_DENY;
}
