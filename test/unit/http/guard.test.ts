import { describe, expect, it } from 'vitest';
import type { Identity } from '../../../src/acl/identity.js';
import { agentErrorOf } from '../../support/errors.js';
import { guard } from '../../../src/http/guard.js';
import type { Reply } from '../../../src/http/reply.js';
import type { MethodSpec } from '../../../src/http/routes.js';
import { request, testGate } from './support.js';

const seen: Identity[] = [];
const handler = (_req: unknown, identity: Identity): Reply => {
  seen.push(identity);
  return { status: 200 };
};
const withToken = (token: string) => request({ tokenHeader: token });


describe('guard', () => {
  it("'none' runs the handler without resolving any token, with an identity that allows nothing", () => {
    seen.length = 0;
    const run = guard({ handler, acl: 'none' }, testGate(), false);
    expect(run(withToken('unknown'))).toEqual({ status: 200 });
    expect(seen[0]?.authorizer.allowed('key', 'read', 'x')).toBe(false);
  });

  it("'resolved' hands the resolved identity to the handler, and refuses an unknown token", () => {
    seen.length = 0;
    const run = guard({ handler, acl: 'resolved' }, testGate(), false);
    run(withToken('r:key'));
    expect(seen[0]?.accessorId).toBe('accessor-of-r:key');
    const err = agentErrorOf(() => run(withToken('unknown')));
    expect([err.code, err.kind, err.message]).toEqual(['ACL_NOT_FOUND', 'permission-denied', 'ACL not found']);
  });

  it('a declared permission is checked before the handler, with Consul\'s attributed message', () => {
    seen.length = 0;
    const spec: MethodSpec = { handler, acl: { resource: 'key', access: 'write', name: (req) => req.rest } };
    const run = guard(spec, testGate(), false);
    expect(run(withToken('w:key'))).toEqual({ status: 200 });
    const err = agentErrorOf(() => run(request({ tokenHeader: 'r:key' }, 'app/x')));
    expect(err.code).toBe('ACL_PERMISSION_DENIED');
    expect(err.message).toBe(`Permission denied: token with AccessorID 'accessor-of-r:key' lacks permission 'key:write' on "app/x"`);
    expect(seen).toHaveLength(1);
  });

  it('words a denial of the anonymous token as Consul does', () => {
    const run = guard({ handler, acl: { resource: 'operator', access: 'read' } }, testGate(), false);
    expect(agentErrorOf(() => run(request())).message).toBe(
      "Permission denied: anonymous token lacks permission 'operator:read'. The anonymous token is used implicitly when a request does not specify a token.",
    );
  });

  it('the function form picks the requirement per request', () => {
    const spec: MethodSpec = {
      handler,
      acl: (req) => (req.query.has('recurse') ? 'resolved' : { resource: 'key', access: 'read', name: (r) => r.rest }),
    };
    const run = guard(spec, testGate(), false);
    expect(run(request({ tokenHeader: 'r:service', rawQuery: 'recurse' }))).toEqual({ status: 200 });
    expect(agentErrorOf(() => run(request({ tokenHeader: 'r:service' }, 'k')))).toMatchObject({ code: 'ACL_PERMISSION_DENIED', kind: 'permission-denied' });
  });

  it('ACL API routes answer 401 `ACL support disabled` while ACLs are off, before anything else', () => {
    const run = guard({ handler, acl: 'none' }, testGate(false), true);
    const err = agentErrorOf(() => run(withToken('w:acl')));
    expect([err.code, err.kind, err.message]).toEqual(['ACL_DISABLED', 'unauthorized', 'ACL support disabled']);
    expect(guard({ handler, acl: 'none' }, testGate(true), true)(request())).toEqual({ status: 200 });
  });
});
