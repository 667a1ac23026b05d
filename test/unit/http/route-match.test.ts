import { describe, expect, it } from 'vitest';
import { agentError } from '../../../src/core/errors.js';
import { RouteMatcher } from '../../../src/http/route-match.js';
import type { CompiledRoute } from '../../../src/http/routes.js';

function route(path: string, prefix = false): CompiledRoute {
  return {
    path,
    prefix,
    handlers: new Map(),
    changesState: new Set(),
    allow: 'OPTIONS',
    maxBodyBytes: 1,
    bodyTooLarge: () => agentError('HTTP_BODY_TOO_LARGE', { size: 0, max: 0 }),
  };
}

describe('RouteMatcher', () => {
  const matcher = new RouteMatcher([
    route('/v1/kv/', true),
    route('/v1/acl/token'),
    route('/v1/acl/token/', true),
    route('/v1/acl/', true),
    route('/v1/status/leader'),
  ]);
  const at = (path: string): string => {
    const m = matcher.match(path);
    return m.kind === 'route' ? `${m.route.path}|${m.rest}` : m.kind === 'redirect' ? `-> ${m.location}` : 'none';
  };

  it('matches an exact path', () => {
    expect(at('/v1/status/leader')).toBe('/v1/status/leader|');
    expect(at('/v1/acl/token')).toBe('/v1/acl/token|');
  });

  it('matches the longest subtree and hands over the rest, still encoded', () => {
    expect(at('/v1/kv/')).toBe('/v1/kv/|');
    expect(at('/v1/kv/a/b%2Fc')).toBe('/v1/kv/|a/b%2Fc');
    expect(at('/v1/acl/token/abc')).toBe('/v1/acl/token/|abc');
    expect(at('/v1/acl/policy/x')).toBe('/v1/acl/|policy/x');
  });

  it('redirects the slash-less form of a subtree unless it is a route of its own', () => {
    expect(at('/v1/kv')).toBe('-> /v1/kv/');
    expect(at('/v1/acl')).toBe('-> /v1/acl/');
  });

  it('matches nothing else', () => {
    expect(at('/')).toBe('none');
    expect(at('/v1/status/leader/x')).toBe('none');
    expect(at('/v1/kvx')).toBe('none');
    expect(at('*')).toBe('none');
  });
});
