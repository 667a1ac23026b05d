// The connection-authorization decision, one function for both of its callers (POST
// /v1/agent/connect/authorize and the in-process agent.authorize()), with Consul's steps in
// Consul's order: connect enabled → the request (Target, the client's SPIFFE ID, that it names a
// service) → service:write on the Target → the client's partition → the destination namespace →
// the first intention by precedence whose source matches the client, else the ACL default.
// Synchronous and transport-free. A deny is a normal result with a reason; a refusal is the
// AgentError the endpoint answers with (400, 403). Every possible answer is built ahead of time
// with its JSON bytes (decision.ts), so deciding allocates nothing.
// Guarded by bench/micro/authorize.ts and bench/sizing/authorize.ts.
import { requirePermission, type Identity } from '../acl/identity.js';
import { agentError } from '../core/errors.js';
import { DEFAULT_NAMESPACE, resolveNamespace, type RequestNamespaces } from '../core/namespace.js';
import { firstMatch, type IntentionIndex } from './intentions/index.js';
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
 * A request that passed the checks. Immutable, so a caller may keep it and hand it back, and
 * `authorize` then skips the checks.
 */
export class CheckedAuthorizeRequest {
  constructor(
    readonly target: string,
    /** The request's own `Namespace`; '' when it names none. */
    readonly namespace: string,
    readonly source: SpiffeService,
  ) {}
}

export interface AuthorizeDeps {
  readonly connectEnabled: boolean;
  /** The intention index as of now (rebuilt on every write, so never stale). */
  readonly intentions: { current(): IntentionIndex };
}

/** The caller, or how to resolve it: resolved only once the request passed its checks, as Consul does. */
export type Caller = Identity | (() => Identity);

export interface Authorization {
  readonly decision: Decision;
  /** The destination namespace the decision was taken in. */
  readonly namespace: string;
}

const NO_REQUEST_NAMESPACES: RequestNamespaces = Object.freeze({});

/** The whole decision; throws the AgentError the endpoint answers with. */
export function authorize(
  deps: AuthorizeDeps,
  request: AuthorizeRequest | CheckedAuthorizeRequest,
  caller: Caller,
  requested: RequestNamespaces = NO_REQUEST_NAMESPACES,
): Authorization {
  requireConnect(deps.connectEnabled);
  const checked = request instanceof CheckedAuthorizeRequest ? request : checkAuthorizeRequest(request);
  const identity = typeof caller === 'function' ? caller() : caller;
  requirePermission(identity, 'service', 'write', checked.target);
  checkPartition(checked.source);
  const namespace = resolveNamespace(
    { body: checked.namespace, query: requested.query, header: requested.header, token: identity.namespace },
    DEFAULT_NAMESPACE,
  );
  return {
    decision: decide(
      deps.intentions.current(),
      namespace,
      checked.target,
      checked.source,
      identity.authorizer.defaultAllow,
    ),
    namespace,
  };
}

export function requireConnect(connectEnabled: boolean): void {
  if (!connectEnabled) throw agentError('CONNECT_DISABLED');
}

/**
 * The request's fields are strings (or absent), the Target is set, the client URI is a SPIFFE ID
 * and names a service. The partition is checked later, after the ACL step, as Consul does.
 */
export function checkAuthorizeRequest(request: AuthorizeRequest): CheckedAuthorizeRequest {
  if (request === null || typeof request !== 'object')
    throw agentError('BODY_DECODE', { prefix: 'Request decode failed', detail: 'the request must be an object' });
  const target = stringField(request.Target, 'Target');
  const namespace = stringField(request.Namespace, 'Namespace');
  const uri = stringField(request.ClientCertURI, 'ClientCertURI');
  if (target === '') throw agentError('AUTHORIZE_NO_TARGET');
  const parsed = parseSpiffeId(uri);
  if (!parsed.ok) throw agentError('AUTHORIZE_BAD_URI');
  const id = parsed.id;
  if (id.kind !== 'service') throw agentError('AUTHORIZE_NOT_SERVICE');
  return new CheckedAuthorizeRequest(target, namespace, id);
}

// A JavaScript caller can pass anything; the HTTP body was decoded to strings already.
function stringField(value: unknown, name: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string')
    throw agentError('BODY_DECODE', { prefix: 'Request decode failed', detail: `${name} must be a string` });
  return value;
}

/** Partitions are out of scope (docs/decisions.md D2), so a client from any other partition is refused. */
export function checkPartition(source: SpiffeService): void {
  if (source.partition !== 'default') {
    throw agentError('AUTHORIZE_PARTITION', { partition: source.partition });
  }
}

/**
 * The first intention by precedence whose source matches the client wins; with none, the default
 * (`defaultAllow`: ACLs off, or acl.default_policy = allow).
 */
export function decide(
  index: IntentionIndex,
  targetNamespace: string,
  target: string,
  source: SpiffeService,
  defaultAllow: boolean,
): Decision {
  const match = firstMatch(index, targetNamespace, target, source.namespace, source.service);
  if (match !== undefined) return match.decision;
  return defaultAllow ? DEFAULT_ALLOW : DEFAULT_DENY;
}
