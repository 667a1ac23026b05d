import { describe, expect, it } from 'vitest';
import { agentError, type AgentError } from '../../../src/core/errors.js';
import {
  BODY_METHODS,
  compileRoutes as compile,
  parsedMethod,
  type MethodSpec,
  type Route,
} from '../../../src/http/routes.js';
import { request, testGate } from './support.js';

const h: MethodSpec = { handler: () => ({ status: 200 }), acl: 'none' };
const compileRoutes = (routes: Route[], maxBody: number) => compile(routes, testGate(), maxBody);

describe('compileRoutes', () => {
  it('Allow lists OPTIONS first, then the methods in declaration order', () => {
    const routes = compileRoutes(
      [
        { path: '/v1/kv/', prefix: true, methods: { GET: h, PUT: h, DELETE: h } },
        { path: '/v1/agent/connect/authorize', methods: { POST: h } },
        { path: '/v1/connect/ca/configuration', methods: { PUT: h, GET: h } },
      ],
      1000,
    );
    expect(routes.map((r) => r.allow)).toEqual(['OPTIONS,GET,PUT,DELETE', 'OPTIONS,POST', 'OPTIONS,PUT,GET']);
    expect(routes.map((r) => r.prefix)).toEqual([true, false, false]);
    expect([...(routes[0]?.handlers.keys() ?? [])]).toEqual(['GET', 'PUT', 'DELETE']);
    expect(routes[0]?.handlers.get('GET')?.(request())).toEqual({ status: 200 });
    expect(routes[0]?.handlers.get('POST')).toBeUndefined();
  });

  it('compiles methods with and without a parse phase side by side', () => {
    const parsedBodies: string[] = [];
    const post = parsedMethod({
      parse: (req) => req.body?.toString() ?? '',
      acl: 'none',
      handler: (_req, _identity, body) => {
        parsedBodies.push(body);
        return { status: 200 };
      },
    });
    const [r] = compileRoutes([{ path: '/v1/x', methods: { GET: h, POST: post } }], 1000);
    expect(r?.allow).toBe('OPTIONS,GET,POST');
    expect(r?.handlers.get('POST')?.(request({ method: 'POST' }, '', Buffer.from('payload')))).toEqual({ status: 200 });
    expect(r?.handlers.get('GET')?.(request())).toEqual({ status: 200 });
    expect(parsedBodies).toEqual(['payload']);
  });

  it('uses the default body cap unless the route sets its own', () => {
    const [a, b] = compileRoutes(
      [
        { path: '/a', methods: { PUT: h } },
        { path: '/b', methods: { PUT: h }, maxBodyBytes: 512 },
      ],
      4096,
    );
    expect(a?.maxBodyBytes).toBe(4096);
    expect(b?.maxBodyBytes).toBe(512);
  });

  it('has a default 413 text, and keeps a route-specific one', () => {
    const custom = (size: number, max: number): AgentError => agentError('KV_VALUE_TOO_LARGE', { size, max });
    const [a, b] = compileRoutes(
      [
        { path: '/a', methods: { PUT: h } },
        { path: '/b', methods: { PUT: h }, bodyTooLarge: custom },
      ],
      10,
    );
    expect(a?.bodyTooLarge(20, 10).message).toBe('Request body(20 bytes) too large, max size: 10 bytes.');
    expect(a?.bodyTooLarge(20, 10).code).toBe('HTTP_BODY_TOO_LARGE');
    expect(b?.bodyTooLarge(20, 10).code).toBe('KV_VALUE_TOO_LARGE');
  });

  it('throws on a path declared twice', () => {
    expect(() =>
      compileRoutes(
        [
          { path: '/v1/kv/', prefix: true, methods: { GET: h } },
          { path: '/v1/kv/', methods: { PUT: h } },
        ],
        10,
      ),
    ).toThrow('route /v1/kv/ declared twice');
  });

  it("throws on a prefix route whose path does not end in '/'", () => {
    expect(() => compileRoutes([{ path: '/v1/kv', prefix: true, methods: { GET: h } }], 10)).toThrow(
      "prefix route /v1/kv must end in '/'",
    );
  });

  it('an exact route may end in / without being a prefix', () => {
    const [r] = compileRoutes([{ path: '/v1/x/', methods: { GET: h } }], 10);
    expect(r?.prefix).toBe(false);
  });
});

describe('BODY_METHODS', () => {
  it('reads bodies for PUT and POST only', () => {
    expect([...BODY_METHODS].sort()).toEqual(['POST', 'PUT']);
  });
});
