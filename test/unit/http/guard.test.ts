import { describe, expect, it } from 'vitest';
import type { Identity } from '../../../src/acl/identity.js';
import { agentErrorOf } from '../../support/errors.js';
import { guard } from '../../../src/http/guard.js';
import type { Reply } from '../../../src/http/reply.js';
import { agentError } from '../../../src/core/errors.js';
import type { ApiRequest } from '../../../src/http/request.js';
import { parsedMethod, type MethodSpec, type ParsedMethodSpec } from '../../../src/http/routes.js';
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
    expect(run(withToken('r:key'))).toEqual({ status: 200 });
    expect(seen[0]?.accessorId).toBe('accessor-of-r:key');
    const err = agentErrorOf(() => run(withToken('unknown')));
    expect([err.code, err.kind, err.message]).toEqual(['ACL_NOT_FOUND', 'permission-denied', 'ACL not found']);
  });

  it("a declared permission is checked before the handler, with Consul's attributed message", () => {
    seen.length = 0;
    const spec: MethodSpec = { handler, acl: { resource: 'key', access: 'write', name: (req) => req.rest } };
    const run = guard(spec, testGate(), false);
    expect(run(withToken('w:key'))).toEqual({ status: 200 });
    const err = agentErrorOf(() => run(request({ tokenHeader: 'r:key' }, 'app/x')));
    expect(err.code).toBe('ACL_PERMISSION_DENIED');
    expect(err.message).toBe(
      `Permission denied: token with AccessorID 'accessor-of-r:key' lacks permission 'key:write' on "app/x"`,
    );
    expect(seen).toHaveLength(1);
  });

  it('words a denial of the anonymous token as Consul does', () => {
    const run = guard({ handler, acl: { resource: 'operator', access: 'read' } }, testGate(), false);
    expect(agentErrorOf(() => run(request())).code).toBe('ACL_PERMISSION_DENIED');
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
    expect(agentErrorOf(() => run(request({ tokenHeader: 'r:service' }, 'k')))).toMatchObject({
      code: 'ACL_PERMISSION_DENIED',
      kind: 'permission-denied',
    });
  });

  it('ACL API routes answer 401 `ACL support disabled` while ACLs are off, before anything else', () => {
    const run = guard({ handler, acl: 'none' }, testGate(false), true);
    const err = agentErrorOf(() => run(withToken('w:acl')));
    expect([err.code, err.kind, err.message]).toEqual(['ACL_DISABLED', 'unauthorized', 'ACL support disabled']);
    expect(guard({ handler, acl: 'none' }, testGate(true), true)(request())).toEqual({ status: 200 });
  });
});

describe('guard: the parse phase', () => {
  interface Parsed {
    readonly name: string;
  }
  /** A spec whose parse, ACL function and handler record what they ran and received. */
  function recording(parse: (req: ApiRequest) => Parsed) {
    const log: string[] = [];
    const received: Parsed[] = [];
    const spec: ParsedMethodSpec<Parsed> = {
      parse: (req) => {
        log.push('parse');
        return parse(req);
      },
      acl: (_req, parsed) => {
        log.push('acl');
        received.push(parsed);
        return { resource: 'key', access: 'write', name: () => parsed.name };
      },
      handler: (_req, identity, parsed) => {
        log.push(`handler ${identity.accessorId}`);
        received.push(parsed);
        return { status: 200 };
      },
    };
    return { spec, log, received };
  }

  it('runs parse once, and the ACL function and the handler receive the very value it returned', () => {
    const { spec, log, received } = recording((req) => ({ name: req.rest }));
    expect(guard(spec, testGate(), false)(request({ tokenHeader: 'w:key' }, 'app/x'))).toEqual({ status: 200 });
    expect(log).toEqual(['parse', 'acl', 'handler accessor-of-w:key']);
    expect(received).toHaveLength(2);
    expect(received[0]).toBe(received[1]);
    expect(received[0]).toEqual({ name: 'app/x' });
  });

  it('a static requirement is enforced after parse, and the handler still receives the parsed value', () => {
    const seenParsed: Parsed[] = [];
    const spec: ParsedMethodSpec<Parsed> = {
      parse: (req) => ({ name: req.rest }),
      acl: { resource: 'key', access: 'write', name: (req) => req.rest },
      handler: (_req, _identity, parsed) => {
        seenParsed.push(parsed);
        return { status: 200 };
      },
    };
    const run = guard(spec, testGate(), false);
    expect(agentErrorOf(() => run(request({ tokenHeader: 'r:key' }, 'k'))).kind).toBe('permission-denied');
    expect(run(request({ tokenHeader: 'w:key' }, 'k'))).toEqual({ status: 200 });
    expect(seenParsed).toEqual([{ name: 'k' }]);
  });

  it('a parse error is answered before the token is looked at or the ACL function runs', () => {
    const { spec, log } = recording(() => {
      throw agentError('BODY_DECODE', { prefix: 'Request decode failed', detail: 'EOF' });
    });
    const err = agentErrorOf(() => guard(spec, testGate(), false)(withToken('unknown')));
    expect([err.kind, err.message]).toEqual(['invalid', 'Request decode failed: EOF']);
    expect(log).toEqual(['parse']);
  });

  it('ACL API routes answer 401 while ACLs are off before parsing', () => {
    const { spec, log } = recording((req) => ({ name: req.rest }));
    expect(agentErrorOf(() => guard(spec, testGate(false), true)(withToken('w:key'))).kind).toBe('unauthorized');
    expect(log).toEqual([]);
  });

  it('parsedMethod infers the parsed type for the ACL function and the handler, and checks them against parse', () => {
    const names: string[] = [];
    const method = parsedMethod({
      parse: (req) => ({ name: req.rest, size: req.rest.length }),
      acl: (_req, parsed) => (parsed.size > 0 ? 'resolved' : 'none'),
      handler: (_req, _identity, parsed) => {
        names.push(parsed.name);
        return { status: 200 };
      },
    });
    expect(method.open((spec) => guard(spec, testGate(), false))(request({}, 'abc'))).toEqual({ status: 200 });
    expect(names).toEqual(['abc']);
    parsedMethod({
      // @ts-expect-error: parse must return what the handler takes
      parse: () => 42,
      acl: 'none',
      handler: (_req, _identity, parsed: string) => ({ status: 200, body: parsed }),
    });
  });
});
