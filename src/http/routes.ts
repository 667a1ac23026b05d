// The route table's types and its compiled form. Each method of a route declares its ACL
// requirement next to its handler, and compiling wraps the handler in the one enforcement
// mechanism (guard.ts), so no endpoint can forget its check. Everything a request needs from its
// route (guarded handler per method, the Allow header, the body cap) is decided here, at start-up.
import type { Identity } from '../acl/identity.js';
import type { Access, Resource } from '../acl/types.js';
import type { Parked } from './blocking.js';
import { guard, type AclGate } from './guard.js';
import type { ApiRequest } from './request.js';
import type { Reply } from './reply.js';

/** A reply now, a reply later, or a blocking read parked until its data changes. */
export type Outcome = Reply | Promise<Reply> | Parked;
export type Handler = (req: ApiRequest, identity: Identity) => Outcome;
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
 * A function picks one per request (KV GET: read one key, or filter a listing).
 */
export type AclRequirement = Permission | 'resolved' | 'none';

export interface MethodSpec {
  readonly handler: Handler;
  readonly acl: AclRequirement | ((req: ApiRequest) => AclRequirement);
}

export interface Route {
  /** The path; a prefix route ends in '/' and matches its whole subtree (Consul's ServeMux rule). */
  readonly path: string;
  readonly prefix?: boolean;
  readonly methods: Partial<Record<Method, MethodSpec>>;
  /** The /v1/acl/* family: answers 401 `ACL support disabled` while ACLs are off. */
  readonly aclApi?: boolean;
  /** Body cap in bytes for PUT/POST; the agent's `limits.http_max_body_bytes` when absent. */
  readonly maxBodyBytes?: number;
  /** The 413 text for a body over the cap (KV words it as Consul does). */
  readonly bodyTooLarge?: (size: number, max: number) => string;
}

export interface CompiledRoute {
  readonly path: string;
  readonly prefix: boolean;
  readonly handlers: ReadonlyMap<string, RequestHandler>;
  /** `OPTIONS,GET,PUT,DELETE`: OPTIONS first, then the declared methods. */
  readonly allow: string;
  readonly maxBodyBytes: number;
  readonly bodyTooLarge: (size: number, max: number) => string;
}

const defaultTooLarge = (size: number, max: number): string =>
  `Request body(${size} bytes) too large, max size: ${max} bytes.`;

export function compileRoutes(routes: readonly Route[], gate: AclGate, defaultMaxBodyBytes: number): CompiledRoute[] {
  const seen = new Set<string>();
  return routes.map((route) => {
    if (seen.has(route.path)) throw new Error(`route ${route.path} declared twice`);
    seen.add(route.path);
    if (route.prefix && !route.path.endsWith('/')) throw new Error(`prefix route ${route.path} must end in '/'`);
    const handlers = new Map<string, RequestHandler>();
    for (const [method, spec] of Object.entries(route.methods) as [Method, MethodSpec][]) {
      handlers.set(method, guard(spec, gate, route.aclApi ?? false));
    }
    return {
      path: route.path,
      prefix: route.prefix ?? false,
      handlers,
      allow: ['OPTIONS', ...handlers.keys()].join(','),
      maxBodyBytes: route.maxBodyBytes ?? defaultMaxBodyBytes,
      bodyTooLarge: route.bodyTooLarge ?? defaultTooLarge,
    };
  });
}

/** Methods whose request body is read and handed to the handler. */
export const BODY_METHODS: ReadonlySet<string> = new Set(['PUT', 'POST']);
