// The route table's types and its compiled form. Everything a request needs from its route
// (handler per method, the Allow header, the body cap) is decided here, once, at start-up.
import type { ApiRequest } from './request.js';
import type { Reply } from './reply.js';

export type Handler = (req: ApiRequest) => Reply | Promise<Reply>;
export type Method = 'GET' | 'PUT' | 'POST' | 'DELETE';

export interface Route {
  /** The path; a prefix route ends in '/' and matches its whole subtree (Consul's ServeMux rule). */
  readonly path: string;
  readonly prefix?: boolean;
  readonly methods: Partial<Record<Method, Handler>>;
  /** Body cap in bytes for PUT/POST; the agent's `limits.http_max_body_bytes` when absent. */
  readonly maxBodyBytes?: number;
  /** The 413 text for a body over the cap (KV words it as Consul does). */
  readonly bodyTooLarge?: (size: number, max: number) => string;
}

export interface CompiledRoute {
  readonly path: string;
  readonly prefix: boolean;
  readonly handlers: ReadonlyMap<string, Handler>;
  /** `OPTIONS,GET,PUT,DELETE`: OPTIONS first, then the declared methods. */
  readonly allow: string;
  readonly maxBodyBytes: number;
  readonly bodyTooLarge: (size: number, max: number) => string;
}

const defaultTooLarge = (size: number, max: number): string =>
  `Request body(${size} bytes) too large, max size: ${max} bytes.`;

export function compileRoutes(routes: readonly Route[], defaultMaxBodyBytes: number): CompiledRoute[] {
  const seen = new Set<string>();
  return routes.map((route) => {
    if (seen.has(route.path)) throw new Error(`route ${route.path} declared twice`);
    seen.add(route.path);
    if (route.prefix && !route.path.endsWith('/')) throw new Error(`prefix route ${route.path} must end in '/'`);
    const handlers = new Map<string, Handler>(Object.entries(route.methods) as [string, Handler][]);
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
