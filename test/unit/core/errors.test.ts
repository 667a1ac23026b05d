import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode } from '../../../src/core/error-catalogue.js';
import { AgentError, agentError, isAgentError, renderMessage } from '../../../src/core/errors.js';
import { STATUS_BY_KIND } from '../../../src/http/reply.js';
import { LeafWork } from '../../../src/connect/ca/leaf-work.js';

const CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];
const PLACEHOLDER = /\{([A-Za-z]+)(:q)?\}/g;
const placeholdersOf = (code: ErrorCode): string[] =>
  [...ERROR_CATALOGUE[code].message.matchAll(PLACEHOLDER)].map((m) => m[1] as string);

describe('the error catalogue', () => {
  it('gives every code a kind the HTTP layer maps to a status, and a non-empty message', () => {
    for (const code of CODES) {
      const spec = ERROR_CATALOGUE[code];
      expect(STATUS_BY_KIND[spec.kind], code).toBeGreaterThanOrEqual(400);
      expect(spec.message.length, code).toBeGreaterThan(0);
    }
  });

  it('names codes in one style, each once (object keys cannot repeat; spelling could drift)', () => {
    for (const code of CODES) expect(code).toMatch(/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$/);
    expect(new Set(CODES.map((c) => c.toLowerCase())).size).toBe(CODES.length);
  });

  it('uses braces only for placeholders, so the typed parameters and the rendering agree', () => {
    for (const code of CODES) {
      const template = ERROR_CATALOGUE[code].message;
      const braces = template.replace(PLACEHOLDER, '').match(/[{}]/g);
      expect(braces, code).toBeNull();
      // `cause` is the Error's cause, passed beside the parameters, never inserted.
      expect(placeholdersOf(code), code).not.toContain('cause');
    }
  });

  it('renders every template with its parameters, leaving no placeholder behind', () => {
    for (const code of CODES) {
      const params = Object.fromEntries(placeholdersOf(code).map((name) => [name, `<${name}>`]));
      const message = renderMessage(code, params);
      expect(message, code).not.toMatch(PLACEHOLDER);
      expect(message, code).not.toContain('undefined');
    }
  });
});

describe('agentError', () => {
  it('takes the kind from the catalogue and renders the message', () => {
    const err = agentError('KV_MISSING_KEY');
    expect(err).toBeInstanceOf(AgentError);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('AgentError');
    expect(err).toMatchObject({ code: 'KV_MISSING_KEY', kind: 'invalid', message: 'Missing key name' });
    expect(err.stack).toContain('Missing key name');
  });

  it('inserts parameters as they are, and quoted where the template says :q', () => {
    expect(agentError('ACL_POLICY_NAME_IN_USE', { name: 'a "b"' }).message).toBe(
      'Invalid Policy: A Policy with Name "a \\"b\\"" already exists',
    );
    expect(agentError('INTENTION_NOT_FOUND', { action: 'delete', id: 'x' })).toMatchObject({
      kind: 'not-found',
      message: "Cannot delete non-existent intention: 'x'",
    });
    expect(agentError('STATE_DIR_LOCKED', { dir: '/d', pid: 42, lockFile: '/d/LOCK' }).message).toBe(
      'state directory /d is in use by process 42 (lock file /d/LOCK)',
    );
    expect(agentError('KV_BAD_CAS', { text: '1x', reason: 'invalid syntax' }).message).toBe(
      'strconv.ParseUint: parsing "1x": invalid syntax',
    );
  });

  it('is typed by code: unknown codes, missing or misspelt parameters do not compile (npm run typecheck)', () => {
    const wrong = [
      // @ts-expect-error not a catalogue code
      () => agentError('NO_SUCH_CODE'),
      // @ts-expect-error the template needs {accessorId}
      () => agentError('ACL_TOKEN_NOT_FOUND'),
      // @ts-expect-error the parameter is accessorId, not id
      () => agentError('ACL_TOKEN_NOT_FOUND', { id: 'x' }),
      // @ts-expect-error a kind is the catalogue's, never the raise site's
      () => new AgentError('STORE_CLOSED', 'invalid', 'state store is closed'),
    ];
    expect(wrong).toHaveLength(4);
  });

  it('carries a cause beside the parameters, never inside the message', () => {
    const cause = new Error('disk full');
    const err = agentError('STATE_DIR_LOCK_FAILED', { dir: '/d', cause });
    expect(err.cause).toBe(cause);
    expect(err.message).toBe('cannot lock state directory /d');
    expect(agentError('STATE_WAL_WRITE_FAILED', { cause })).toMatchObject({ kind: 'unavailable', cause });
    expect('cause' in agentError('STORE_CLOSED')).toBe(false);
  });

  it("keeps Consul's texts that clients match on", () => {
    expect(agentError('ACL_NOT_FOUND')).toMatchObject({ kind: 'permission-denied', message: 'ACL not found' });
    expect(agentError('ACL_DISABLED')).toMatchObject({ kind: 'unauthorized', message: 'ACL support disabled' });
    expect(
      agentError('ACL_PERMISSION_DENIED', { reason: "anonymous token lacks permission 'key:write'" }).message,
    ).toBe("Permission denied: anonymous token lacks permission 'key:write'");
    expect(agentError('CSR_RATE_LIMITED')).toMatchObject({
      kind: 'rate-limited',
      message: 'Rate limit reached, try again later',
    });
    expect(agentError('CONNECT_DISABLED').message).toBe('Connect must be enabled in order to use this endpoint');
  });
});

describe('AgentError', () => {
  it('rebuilt from a rendered message (a subclass, a worker result) takes the catalogue kind', () => {
    expect(new AgentError('STORE_CLOSED', 'state store is closed')).toMatchObject({
      code: 'STORE_CLOSED',
      kind: 'unavailable',
      message: 'state store is closed',
    });
    const cause = new Error('x');
    expect(new AgentError('STATE_APPLY_FAILED', 'applying the commit failed', { cause }).cause).toBe(cause);
  });

  it('isAgentError tells AgentErrors from everything else', () => {
    expect(isAgentError(agentError('KV_MISSING_KEY'))).toBe(true);
    expect(isAgentError(new Error('x'))).toBe(false);
    expect(isAgentError({ code: 'KV_MISSING_KEY', kind: 'invalid', message: 'y' })).toBe(false);
    expect(isAgentError(undefined)).toBe(false);
    expect(isAgentError('Permission denied')).toBe(false);
  });
});

describe('the worker boundary', () => {
  it('a signing thread answers a failure with a catalogue code', () => {
    const result = new LeafWork().run({
      caId: 'not-prepared',
      ca: undefined,
      serial: 1n,
      uri: 'spiffe://example.consul/ns/default/dc/dc1/svc/web',
      nowMs: 0,
      ttlMs: 1000,
      trustDomain: 'example.consul',
      datacenter: 'dc1',
    });
    expect(result).toMatchObject({ ok: false, code: 'CA_UNKNOWN' });
    expect(result.ok ? undefined : result.code).toBeOneOf(CODES);
  });
});
