import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE } from '../../../src/core/error-catalogue.js';
import { AgentError, type ErrorCode, type ErrorKind } from '../../../src/core/errors.js';
import {
  cleanPath,
  decodePathRest,
  errorReply,
  methodReply,
  redirectReply,
  unmatchedPathReply,
} from '../../../src/http/dispatch.js';
import { compileRoutes } from '../../../src/http/routes.js';
import { answerOf } from '../../support/errors.js';
import { recordingLogger, testGate } from './support.js';

const TEXT = 'text/plain; charset=utf-8';
const ok = { handler: () => ({ status: 200 }), acl: 'none' as const };
const [kvRoute] = compileRoutes(
  [{ path: '/v1/kv/', prefix: true, methods: { GET: ok, PUT: ok, DELETE: ok } }],
  testGate(),
  1024,
);
const route = kvRoute as NonNullable<typeof kvRoute>;

describe('methodReply', () => {
  it('OPTIONS: 200, the Allow header, no body, no content type', () => {
    const reply = methodReply(route, 'OPTIONS');
    expect(reply).toEqual({ status: 200, headers: [['Allow', 'OPTIONS,GET,PUT,DELETE']] });
  });

  it.each(['PATCH', 'POST', 'HEAD', 'get'])('%s: 405 with Consul text and Allow', (method) => {
    const reply = methodReply(route, method);
    expect([reply.status, reply.body]).toEqual(answerOf('HTTP_METHOD_NOT_ALLOWED', { method }));
    expect(reply.body).toBe(`method ${method} not allowed`);
    expect(reply.contentType).toBe(TEXT);
    expect(reply.headers).toEqual([['Allow', 'OPTIONS,GET,PUT,DELETE']]);
  });
});

describe('unmatchedPathReply', () => {
  it('/ answers 200 with a plain-text line', () => {
    const reply = unmatchedPathReply('/', '', 'GET');
    expect(reply.status).toBe(200);
    expect(reply.contentType).toBe(TEXT);
    expect(reply.body).toMatch(/UI disabled.*\n$/);
  });

  it.each(['/v1/nope', '/v1/', '/api/v1/x', '/v1/kv2/x'])(
    '%s under /v1/: 404 "not a recognized HTTP API endpoint"',
    (path) => {
      const reply = unmatchedPathReply(path, '', 'GET');
      const [status, body] = answerOf('HTTP_UNKNOWN_ENDPOINT');
      expect(reply).toEqual({ status, body, contentType: TEXT });
      expect(body).toBe('Invalid URL path: not a recognized HTTP API endpoint\n');
    },
  );

  it.each(['/nope', '/v1', '/v2/kv/x', '/favicon.ico'])('%s outside /v1/: 404 naming /v1/', (path) => {
    const reply = unmatchedPathReply(path, '', 'PUT');
    const [status, body] = answerOf('HTTP_NOT_API_PATH');
    expect(reply).toEqual({ status, body, contentType: TEXT });
    expect(body).toBe("Invalid URL path: if attempting to use the HTTP API, ensure the path starts with '/v1/'\n");
  });

  it.each([
    ['/v1//kv/x', '/v1/kv/x'],
    ['/v1/./kv', '/v1/kv'],
    ['/v1/kv/../agent/self', '/v1/agent/self'],
    ['//', '/'],
    ['/v1/kv/a/./', '/v1/kv/a/'],
  ])('unclean %s: 301 to %s, HTML body on GET', (path, location) => {
    const reply = unmatchedPathReply(path, '', 'GET');
    expect(reply.status).toBe(301);
    expect(reply.headers).toEqual([['Location', location]]);
    expect(reply.body).toBe(`<a href="${location}">Moved Permanently</a>.\n\n`);
    expect(reply.contentType).toBe('text/html; charset=utf-8');
  });

  it('unclean path on HEAD: a body (the adapter sends only its length)', () => {
    expect(unmatchedPathReply('/v1//kv/x', '', 'HEAD').body).toBeDefined();
  });

  it.each(['PUT', 'DELETE', 'POST', 'OPTIONS'])('unclean path on %s: 301 with Location and no body', (method) => {
    expect(unmatchedPathReply('/v1//kv/x', '', method)).toEqual({ status: 301, headers: [['Location', '/v1/kv/x']] });
  });
});

it('keeps the query string on the redirect, as ServeMux does', () => {
  expect(unmatchedPathReply('/v1//kv/x', 'recurse&index=3', 'PUT')).toEqual({
    status: 301,
    headers: [['Location', '/v1/kv/x?recurse&index=3']],
  });
});

describe('redirectReply', () => {
  it('HTML-escapes the location inside the body, not in the header', () => {
    const location = '/v1/"><script>&\'';
    const reply = redirectReply(location, 'GET');
    expect(reply.headers).toEqual([['Location', location]]);
    expect(reply.body).toBe('<a href="/v1/&#34;&gt;&lt;script&gt;&amp;&#39;">Moved Permanently</a>.\n\n');
  });
});

describe('cleanPath (Go path.Clean, trailing slash kept)', () => {
  it.each([
    ['/', '/'],
    ['', '/'],
    ['/v1/kv/x', '/v1/kv/x'],
    ['/v1/kv/', '/v1/kv/'],
    ['/v1//kv//x', '/v1/kv/x'],
    ['/v1/./kv', '/v1/kv'],
    ['/v1/kv/.', '/v1/kv'],
    ['/v1/kv/..', '/v1'],
    ['/v1/kv/../', '/v1/'],
    ['/..', '/'],
    ['/../../v1', '/v1'],
    ['/a/b/../../..', '/'],
    ['/v1/kv/a..b/.c', '/v1/kv/a..b/.c'],
    ['v1/kv', '/v1/kv'],
  ])('%j → %j', (path, clean) => {
    expect(cleanPath(path)).toBe(clean);
  });
});

/** Any catalogue code of `kind`: errorReply reads only the error's kind and message. */
function codeOfKind(kind: ErrorKind): ErrorCode {
  const entry = Object.entries(ERROR_CATALOGUE).find(([, spec]) => spec.kind === kind && !('logged' in spec));
  if (entry === undefined) throw new Error(`no catalogue code of kind ${kind}`);
  return entry[0] as ErrorCode;
}

describe('errorReply', () => {
  const cases: [ErrorKind, number][] = [
    ['invalid', 400],
    ['unauthorized', 401],
    ['permission-denied', 403],
    ['not-found', 404],
    ['method-not-allowed', 405],
    ['conflict', 409],
    ['too-large', 413],
    ['unsupported', 415],
    ['rate-limited', 429],
    ['not-implemented', 501],
    ['internal', 500],
    ['unavailable', 503],
  ];

  it.each(cases)('AgentError of kind %s → %d with its message as plain text', (kind, status) => {
    const log = recordingLogger();
    const reply = errorReply(new AgentError(codeOfKind(kind), `message for ${kind}`), log, '/v1/kv/x');
    expect(reply).toEqual({ status, body: `message for ${kind}`, contentType: TEXT });
    if (status >= 500) {
      expect(log.entries).toHaveLength(1);
      expect(log.entries[0]?.level).toBe('error');
      expect(log.entries[0]?.obj).toMatchObject({ path: '/v1/kv/x' });
    } else {
      expect(log.entries).toEqual([]);
    }
  });

  it('does not log each request failed by a code whose raiser logs the cause once', () => {
    const log = recordingLogger();
    expect(
      errorReply(new AgentError('CA_SIGNER_NO_THREAD', 'no thread'), log, '/v1/agent/connect/ca/leaf/web'),
    ).toEqual({ status: 503, body: 'no thread', contentType: TEXT });
    expect(log.entries).toEqual([]);
  });

  it('an empty AgentError message gives an empty body (bare 404)', () => {
    expect(errorReply(new AgentError('INTENTION_NOT_FOUND', ''), recordingLogger(), '/')).toEqual({
      status: 404,
      body: '',
      contentType: TEXT,
    });
  });

  it('a non-AgentError is a 500 with its message, and is logged', () => {
    const log = recordingLogger();
    const err = new TypeError('boom');
    const [status, body] = answerOf('INTERNAL_UNEXPECTED', { detail: 'boom' });
    expect(errorReply(err, log, '/v1/agent/self')).toEqual({ status, body, contentType: TEXT });
    expect([status, body]).toEqual([500, 'boom']);
    expect(log.entries).toEqual([{ level: 'error', obj: { err, path: '/v1/agent/self' }, msg: 'unexpected error' }]);
  });

  it('a thrown non-Error or an empty message gives the generic 500 text', () => {
    const log = recordingLogger();
    const [status, body] = answerOf('INTERNAL_UNEXPECTED', { detail: 'An unexpected error occurred' });
    expect(errorReply('a string', log, '/')).toEqual({ status, body, contentType: TEXT });
    expect(errorReply(new Error(''), log, '/')).toEqual({ status, body, contentType: TEXT });
    expect(log.entries).toHaveLength(2);
  });
});

describe('decodePathRest', () => {
  it.each([
    ['plain/key', 'plain/key'],
    ['', ''],
    ['a%20b', 'a b'],
    ['a+b', 'a+b'],
    ['a%2Fb', 'a/b'],
    ['%C3%A9t%C3%A9', 'été'],
    ['100%25', '100%'],
  ])('%j → %j', (raw, decoded) => {
    expect(decodePathRest(raw)).toBe(decoded);
  });

  it.each(['%', '%2', '%zz', 'a%G0', '%C3'])('%j is malformed → undefined', (raw) => {
    expect(decodePathRest(raw)).toBeUndefined();
  });
});
