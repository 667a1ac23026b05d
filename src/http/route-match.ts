// Path lookup for transports without a router of their own (node-server.ts), with the rules the
// uWS adapter gets from its router: an exact path first, then the longest subtree prefix, then
// the slash-less form of a subtree (a redirect, as Go's ServeMux does), then nothing.
import type { CompiledRoute } from './routes.js';

export type RouteMatch =
  | { readonly kind: 'route'; readonly route: CompiledRoute; /** Still percent-encoded. */ readonly rest: string }
  | { readonly kind: 'redirect'; readonly location: string }
  | { readonly kind: 'none' };

const NONE: RouteMatch = Object.freeze({ kind: 'none' });

export class RouteMatcher {
  private readonly exact = new Map<string, RouteMatch>();
  private readonly subtrees = new Map<string, CompiledRoute>();

  constructor(routes: readonly CompiledRoute[]) {
    for (const route of routes) {
      if (route.prefix) this.subtrees.set(route.path, route);
      else this.exact.set(route.path, { kind: 'route', route, rest: '' });
    }
    for (const route of routes) {
      const bare = route.path.slice(0, -1);
      if (route.prefix && !this.exact.has(bare)) this.exact.set(bare, { kind: 'redirect', location: route.path });
    }
  }

  match(path: string): RouteMatch {
    const exact = this.exact.get(path);
    if (exact !== undefined) return exact;
    // Longest subtree first: try each '/' from the right.
    for (let slash = path.lastIndexOf('/'); slash > 0; slash = path.lastIndexOf('/', slash - 1)) {
      const route = this.subtrees.get(path.slice(0, slash + 1));
      if (route !== undefined) return { kind: 'route', route, rest: path.slice(slash + 1) };
    }
    return NONE;
  }
}
