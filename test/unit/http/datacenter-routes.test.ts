// ?dc= over the agent's whole route table (docs/decisions.md#datacenters): every route the agent
// registers (a dev agent built in-process, its table seen as it goes to buildApi; no port) either
// refuses another datacenter before anything else it checks, or is on UNSCOPED_ROUTES; the
// unscoped and peer lists name only routes that exist; and a sample of each answers as Consul does
// (scoped: 500 `No path to datacenter`; unscoped: served).
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAgent, type Agent } from '../../../src/agent/index.js';
import { loadConfig } from '../../../src/config/load.js';
import { isAgentError } from '../../../src/core/errors.js';
import { silentLogger } from '../../../src/core/log.js';
import type * as Api from '../../../src/http/api.js';
import { PEER_ROUTES, UNSCOPED_ROUTES } from '../../../src/http/datacenter.js';
import { errorReply } from '../../../src/http/dispatch.js';
import type { Reply } from '../../../src/http/reply.js';
import { RouteMatcher } from '../../../src/http/route-match.js';
import type { AclRule, Method, MethodSpec, ParsedMethod, Route } from '../../../src/http/route-types.js';
import type { CompiledRoute } from '../../../src/http/routes.js';
import { request } from './support.js';

// What the agent hands buildApi: the route groups (after scopeToDatacenter) and the compiled table.
const built = vi.hoisted(() => [] as { groups: readonly (readonly Route[])[]; compiled: CompiledRoute[] }[]);
vi.mock('../../../src/http/api.js', async (importOriginal) => {
  const api = await importOriginal<typeof Api>();
  return {
    ...api,
    buildApi: (...args: Parameters<typeof api.buildApi>): CompiledRoute[] => {
      const compiled = api.buildApi(...args);
      built.push({ groups: args[2], compiled });
      return compiled;
    },
  };
});

let agent: Agent;
let routes: Route[];
let matcher: RouteMatcher;

beforeAll(async () => {
  agent = await createAgent(loadConfig({ files: [], flags: {}, dev: true }));
  // A lone agent builds one table: the one it serves.
  expect(built).toHaveLength(1);
  const [table] = built;
  routes = (table?.groups ?? []).flat();
  matcher = new RouteMatcher(table?.compiled ?? []);
});
afterAll(async () => {
  await agent.close();
});

/** The code a method's ACL rule throws for a request with `rawQuery`, before it looks at anything else. */
function codeOf(route: Route, spec: MethodSpec | ParsedMethod, rawQuery: string): string {
  const acl = 'open' in spec ? spec.open((s) => s.acl as AclRule<unknown>) : (spec.acl as AclRule<unknown>);
  if (typeof acl !== 'function') return 'served';
  try {
    acl(request({ path: `${route.path}x`, rawQuery }, route.prefix ? 'x' : ''), undefined);
    return 'served';
  } catch (err) {
    // An unscoped rule that reads its parsed body fails on none: it did not refuse the datacenter.
    return isAgentError(err) ? err.code : 'served';
  }
}

function methodsOf(route: Route): [Method, MethodSpec | ParsedMethod][] {
  return Object.entries(route.methods) as [Method, MethodSpec | ParsedMethod][];
}

describe('every route the agent registers', () => {
  it('refuses another datacenter unless UNSCOPED_ROUTES names it', () => {
    expect(routes.length).toBeGreaterThan(80);
    const wrong: string[] = [];
    for (const route of routes) {
      for (const [method, spec] of methodsOf(route)) {
        const code = codeOf(route, spec, 'dc=elsewhere');
        const unscoped = UNSCOPED_ROUTES.has(route.path);
        if (unscoped && code === 'DC_NO_PATH') wrong.push(`${method} ${route.path}: on UNSCOPED_ROUTES yet refused`);
        if (!unscoped && code !== 'DC_NO_PATH') wrong.push(`${method} ${route.path}: neither scoped nor unscoped`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('refuses ?peer= on the routes that read it, and only there', () => {
    const wrong: string[] = [];
    for (const route of routes) {
      for (const [method, spec] of methodsOf(route)) {
        const refused = codeOf(route, spec, 'peer=p') === 'PEERING_UNSUPPORTED';
        if (refused !== PEER_ROUTES.has(route.path)) wrong.push(`${method} ${route.path}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('the lists name only routes the agent registers, and no route is on both', () => {
    const paths = new Set(routes.map((r) => r.path));
    expect([...UNSCOPED_ROUTES].filter((p) => !paths.has(p))).toEqual([]);
    expect([...PEER_ROUTES].filter((p) => !paths.has(p))).toEqual([]);
    expect([...PEER_ROUTES].filter((p) => UNSCOPED_ROUTES.has(p))).toEqual([]);
  });
});

/** The agent's answer to a GET, as the request flow would write it (no index: nothing parks). */
async function get(path: string, rawQuery: string): Promise<{ status: number; body: string }> {
  const match = matcher.match(path);
  if (match.kind !== 'route') throw new Error(`no route ${path}`);
  const handler = match.route.handlers.get('GET');
  if (handler === undefined) throw new Error(`no GET on ${path}`);
  let reply: Reply;
  try {
    reply = (await handler(request({ path, rawQuery }, match.rest))) as Reply;
  } catch (err) {
    reply = errorReply(err, silentLogger, path);
  }
  const body = reply.body;
  return { status: reply.status, body: typeof body === 'string' ? body : Buffer.from(body ?? '').toString() };
}

describe("a sample of each, as Consul's handlers answer", () => {
  // Consul's handlers for these read dc and forward: its servers know no route to dc2.
  it.each([
    '/v1/kv/some/key',
    '/v1/catalog/nodes',
    '/v1/catalog/services',
    '/v1/health/service/web',
    '/v1/session/list',
    '/v1/status/leader',
    '/v1/connect/ca/roots',
    '/v1/agent/connect/ca/roots',
  ])('scoped %s: ?dc=dc2 is 500 No path to datacenter, its own dc is served', async (path) => {
    expect(await get(path, 'dc=dc2')).toEqual({ status: 500, body: 'No path to datacenter' });
    expect((await get(path, 'dc=dc1')).status).not.toBe(500);
  });

  // Consul's handlers for these never read dc.
  it.each(['/v1/agent/self', '/v1/agent/members', '/v1/agent/services', '/v1/catalog/datacenters', '/v1/event/list'])(
    'unscoped %s: ?dc=dc2 is served as without it',
    async (path) => {
      const answer = await get(path, 'dc=dc2');
      expect(answer.status).toBe(200);
      expect((await get(path, '')).status).toBe(200);
    },
  );

  it('/v1/catalog/datacenters names this one whatever dc is asked', async () => {
    expect(JSON.parse((await get('/v1/catalog/datacenters', 'dc=dc2')).body)).toEqual(['dc1']);
  });
});
