// ?dc= and ?peer= on the routes whose Consul handler reads them (docs/decisions.md#datacenters):
// another datacenter is DC_NO_PATH, a peer PEERING_UNSUPPORTED, after the parse phase and before
// the ACL check; the agent's own datacenter, an empty value and every other route are untouched.
import { describe, expect, it } from 'vitest';
import { agentError } from '../../../src/core/errors.js';
import { scopeToDatacenter } from '../../../src/http/datacenter.js';
import { compileRoutes, parsedMethod, type Route } from '../../../src/http/routes.js';
import type { Reply } from '../../../src/http/reply.js';
import { agentErrorOf } from '../../support/errors.js';
import { request, testGate } from './support.js';

const OK: Reply = { status: 200 };
const ok = (): Reply => OK;

const routes: Route[] = [
  // A read whose token only has to resolve.
  { path: '/v1/catalog/nodes', methods: { GET: { acl: 'resolved', handler: ok } } },
  // A write with a permission, and a parse phase that refuses an empty body.
  {
    path: '/v1/kv/',
    prefix: true,
    methods: {
      GET: { acl: { resource: 'key', access: 'read', name: (req) => req.rest }, handler: ok },
      PUT: parsedMethod({
        parse: (req) => {
          if (req.body === undefined || req.body.length === 0) throw agentError('INVALID_INDEX');
          return req.body.length;
        },
        acl: (req) => ({ resource: 'key', access: 'write', name: () => req.rest }),
        handler: ok,
      }),
    },
  },
  // One whose ACL requirement is 'none'.
  { path: '/v1/connect/ca/roots', methods: { GET: { acl: 'none', handler: ok } } },
  // Routes Consul serves without reading dc.
  { path: '/v1/agent/self', methods: { GET: { acl: 'none', handler: ok } } },
  { path: '/v1/event/list', methods: { GET: { acl: 'none', handler: ok } } },
  { path: '/v1/catalog/datacenters', methods: { GET: { acl: 'none', handler: ok } } },
];

const compiled = compileRoutes(scopeToDatacenter(routes, 'dc1'), testGate(), 1 << 20);
const run = (
  path: string,
  rawQuery: string,
  options: { method?: 'GET' | 'PUT'; token?: string; body?: string } = {},
) => {
  const route = compiled.find((r) => (r.prefix ? path.startsWith(r.path) : r.path === path));
  if (route === undefined) throw new Error(`no route ${path}`);
  const method = options.method ?? 'GET';
  const handler = route.handlers.get(method);
  if (handler === undefined) throw new Error(`no ${method} on ${path}`);
  const body = options.body === undefined ? undefined : Buffer.from(options.body);
  return handler(
    request(
      { method, path, rawQuery, tokenHeader: options.token ?? '' },
      route.prefix ? path.slice(route.path.length) : '',
      body,
    ),
  );
};
const codeOf = (fn: () => unknown): string => agentErrorOf(fn).code;

describe('scopeToDatacenter', () => {
  it("answers the agent's own datacenter, an empty dc and no dc as before", () => {
    for (const query of ['', 'dc=dc1', 'dc=', 'stale&dc=dc1']) {
      expect(run('/v1/catalog/nodes', query, { token: 'r:node' })).toBe(OK);
      expect(run('/v1/kv/a', query, { token: 'r:key' })).toBe(OK);
      expect(run('/v1/connect/ca/roots', query)).toBe(OK);
    }
  });

  it('refuses another datacenter with No path to datacenter, a 500 as Consul answers it', () => {
    const err = agentErrorOf(() => run('/v1/catalog/nodes', 'dc=dc2', { token: 'r:node' }));
    expect([err.code, err.kind, err.message]).toEqual(['DC_NO_PATH', 'internal', 'No path to datacenter']);
    expect(codeOf(() => run('/v1/kv/a', 'dc=DC1', { token: 'r:key' }))).toBe('DC_NO_PATH');
    expect(codeOf(() => run('/v1/connect/ca/roots', 'dc=other'))).toBe('DC_NO_PATH');
  });

  it('checks dc before the token: Consul forwards before its servers resolve it', () => {
    expect(codeOf(() => run('/v1/catalog/nodes', 'dc=dc2', { token: 'unknown' }))).toBe('DC_NO_PATH');
    expect(codeOf(() => run('/v1/kv/a', 'dc=dc2', { token: 'r:node' }))).toBe('DC_NO_PATH');
    // Its own datacenter still meets the ACL check.
    expect(codeOf(() => run('/v1/kv/a', 'dc=dc1', { token: 'r:node' }))).toBe('ACL_PERMISSION_DENIED');
  });

  it('checks dc after the parse phase: a malformed body is still its 400', () => {
    expect(codeOf(() => run('/v1/kv/a', 'dc=dc2', { method: 'PUT', token: 'w:key', body: '' }))).toBe('INVALID_INDEX');
    expect(codeOf(() => run('/v1/kv/a', 'dc=dc2', { method: 'PUT', token: 'w:key', body: 'v' }))).toBe('DC_NO_PATH');
    expect(run('/v1/kv/a', 'dc=dc1', { method: 'PUT', token: 'w:key', body: 'v' })).toBe(OK);
  });

  it('refuses ?peer= where Consul reads it (catalog and health reads), and only there', () => {
    const err = agentErrorOf(() => run('/v1/catalog/nodes', 'peer=other', { token: 'r:node' }));
    expect([err.code, err.kind, err.message]).toEqual([
      'PEERING_UNSUPPORTED',
      'invalid',
      'peering must be enabled to use this endpoint',
    ]);
    expect(run('/v1/catalog/nodes', 'peer=', { token: 'r:node' })).toBe(OK);
    expect(run('/v1/kv/a', 'peer=other', { token: 'r:key' })).toBe(OK);
  });

  it('leaves the routes Consul serves without reading dc alone', () => {
    for (const path of ['/v1/agent/self', '/v1/event/list', '/v1/catalog/datacenters'])
      expect(run(path, 'dc=dc2&peer=p')).toBe(OK);
  });

  it('keeps what each method declares besides its ACL rule', () => {
    const [nodes, kv] = scopeToDatacenter(routes, 'dc1');
    expect(nodes).not.toBe(routes[0]);
    expect(kv?.prefix).toBe(true);
    expect(Object.keys(kv?.methods ?? {})).toEqual(['GET', 'PUT']);
    expect(scopeToDatacenter(routes, 'dc1')[3]).toBe(routes[3]);
    const compiledKv = compiled.find((r) => r.path === '/v1/kv/');
    expect([...(compiledKv?.changesState ?? [])]).toEqual(['PUT']);
  });
});
