// The route table's compiled form. Each method of a route declares its ACL requirement next to
// its handler (route-types.ts), and compiling wraps the handler in the one enforcement mechanism
// (guard.ts), so no endpoint can forget its check. Everything a request needs from its route
// (guarded handler per method, the Allow header, the body cap) is decided here, at start-up.
import { agentError, type AgentError } from '../core/errors.js';
import { guard, type AclGate } from './guard.js';
import type { Method, MethodSpec, ParsedMethod, RequestHandler, Route } from './route-types.js';

export {
  parsedMethod,
  type AclRequirement,
  type MethodSpec,
  type Outcome,
  type ParsedMethodSpec,
  type Permission,
  type RequestHandler,
  type Route,
} from './route-types.js';

export interface CompiledRoute {
  readonly path: string;
  readonly prefix: boolean;
  readonly handlers: ReadonlyMap<string, RequestHandler>;
  /** The methods whose requests may change state: PUT, POST and DELETE unless declared `readsOnly`. */
  readonly changesState: ReadonlySet<string>;
  /** `OPTIONS,GET,PUT,DELETE`: OPTIONS first, then the declared methods. */
  readonly allow: string;
  readonly maxBodyBytes: number;
  readonly bodyTooLarge: (size: number, max: number) => AgentError;
}

const defaultTooLarge = (size: number, max: number): AgentError => agentError('HTTP_BODY_TOO_LARGE', { size, max });

/** `defaultMaxBodyBytes` as a function: read per request, so a reload can change it. */
export function compileRoutes(
  routes: readonly Route[],
  gate: AclGate,
  defaultMaxBodyBytes: number | (() => number),
): CompiledRoute[] {
  const seen = new Set<string>();
  return routes.map((route) => {
    if (seen.has(route.path)) throw new Error(`route ${route.path} declared twice`);
    seen.add(route.path);
    if (route.prefix && !route.path.endsWith('/')) throw new Error(`prefix route ${route.path} must end in '/'`);
    const aclApi = route.aclApi ?? false;
    const handlers = new Map<string, RequestHandler>();
    const changesState = new Set<string>();
    for (const [method, spec] of Object.entries(route.methods) as [Method, MethodSpec | ParsedMethod][]) {
      handlers.set(
        method,
        'open' in spec ? spec.open((parsed) => guard(parsed, gate, aclApi)) : guard(spec, gate, aclApi),
      );
      if (method !== 'GET' && spec.readsOnly !== true) changesState.add(method);
    }
    const cap = route.maxBodyBytes ?? defaultMaxBodyBytes;
    return {
      path: route.path,
      prefix: route.prefix ?? false,
      handlers,
      changesState,
      allow: ['OPTIONS', ...handlers.keys()].join(','),
      get maxBodyBytes() {
        return typeof cap === 'number' ? cap : cap();
      },
      bodyTooLarge: route.bodyTooLarge ?? defaultTooLarge,
    };
  });
}

/** Methods whose request body is read and handed to the handler. */
export const BODY_METHODS: ReadonlySet<string> = new Set(['PUT', 'POST']);
