// What a route declares for each method (an optional parse phase, its ACL requirement, its
// handler) and what a request becomes (an Outcome). Shared by the table (routes.ts) and the one
// enforcement point (guard.ts); apart from `parsedMethod`, types only.
import type { Identity } from '../acl/identity.js';
import type { AgentError } from '../core/errors.js';
import type { Access, Resource } from '../acl/types.js';
import type { Parked } from './blocking.js';
import type { ApiRequest } from './request.js';
import type { Reply } from './reply.js';

/** A reply now, a reply later, or a blocking read parked until its data changes. */
export type Outcome = Reply | Promise<Reply> | Parked;
/** `parsed` is what the method's parse phase returned (undefined for a method without one). */
export type Handler<P = undefined> = (req: ApiRequest, identity: Identity, parsed: P) => Outcome;
export type RequestHandler = (req: ApiRequest) => Outcome;
export type Method = 'GET' | 'PUT' | 'POST' | 'DELETE';

/** A permission the request must hold before its handler runs; a denial is a 403. */
export interface Permission {
  readonly resource: Resource;
  readonly access: Access;
  /** The resource name, for named resources (a KV key, a service, a node). */
  readonly name?: (req: ApiRequest) => string;
}

/**
 * - a Permission: checked before the handler runs;
 * - 'resolved': the token must resolve; the handler filters or decides with the identity;
 * - 'none': no token is looked at (status, CA roots).
 */
export type AclRequirement = Permission | 'resolved' | 'none';

/** A requirement, or a function that picks one per request (KV GET: read one key, or filter a listing). */
export type AclRule<P = undefined> = AclRequirement | ((req: ApiRequest, parsed: P) => AclRequirement);

/**
 * A PUT, POST or DELETE that changes no state (authorize): run within the transport's read of the
 * request, as a GET is, where one that may change state is held until it can be answered
 * (request-flow.ts, docs/decisions.md#held-writes).
 */
interface StateDeclaration {
  readonly readsOnly?: true;
}

/** A method that reads its request itself, in the ACL function and in the handler. */
export interface MethodSpec extends StateDeclaration {
  readonly parse?: undefined;
  readonly acl: AclRule;
  readonly handler: Handler;
}

/**
 * A method whose request is parsed once, before anything else is checked: a parse failure (a
 * malformed body's 400) is answered before any token is looked at, and the ACL function and the
 * handler both receive the parsed value.
 */
export interface ParsedMethodSpec<P> extends StateDeclaration {
  readonly parse: (req: ApiRequest) => P;
  readonly acl: AclRule<P>;
  readonly handler: Handler<P>;
}

/**
 * A ParsedMethodSpec with its parse type sealed inside, so that one route table can hold methods
 * of different parse types without `any`; `open` hands the method spec back with its type intact.
 */
export interface ParsedMethod {
  readonly readsOnly: boolean;
  open<R>(use: <P>(spec: ParsedMethodSpec<P>) => R): R;
}

/** Declares a method with a parse phase: P is inferred from `parse` and checked against `acl` and `handler`. */
export function parsedMethod<P>(spec: ParsedMethodSpec<P>): ParsedMethod {
  return { readsOnly: spec.readsOnly === true, open: (use) => use(spec) };
}

export interface Route {
  /** The path; a prefix route ends in '/' and matches its whole subtree (Consul's ServeMux rule). */
  readonly path: string;
  readonly prefix?: boolean;
  readonly methods: Partial<Record<Method, MethodSpec | ParsedMethod>>;
  /** The /v1/acl/* family: answers 401 `ACL support disabled` while ACLs are off. */
  readonly aclApi?: boolean;
  /** Body cap in bytes for PUT/POST; the agent's `limits.http_max_body_bytes` when absent. */
  readonly maxBodyBytes?: number | (() => number);
  /** The 413 text for a body over the cap (KV words it as Consul does). */
  readonly bodyTooLarge?: (size: number, max: number) => AgentError;
}
