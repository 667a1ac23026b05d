import { describe, expect, it } from 'vitest';
import { ANONYMOUS_SECRET } from '../../../src/acl/builtin.js';
import { bearerToken, effectiveToken, requestToken } from '../../../src/http/token.js';
import { request } from './support.js';

describe('requestToken', () => {
  it('?token beats X-Svc-Token beats Authorization: Bearer', () => {
    const all = { rawQuery: 'token=q', tokenHeader: 'h', authorization: 'Bearer b' };
    expect(requestToken(request(all))).toBe('q');
    expect(requestToken(request({ ...all, rawQuery: '' }))).toBe('h');
    expect(requestToken(request({ ...all, rawQuery: '', tokenHeader: '' }))).toBe('b');
    expect(requestToken(request())).toBeUndefined();
  });

  it('an empty ?token= falls through to the header', () => {
    expect(requestToken(request({ rawQuery: 'token=', tokenHeader: 'h' }))).toBe('h');
    expect(requestToken(request({ rawQuery: 'token', tokenHeader: 'h' }))).toBe('h');
    expect(requestToken(request({ rawQuery: 'token=&pretty', authorization: 'Bearer b' }))).toBe('b');
  });

  it('reads the token among other query parameters, decoded', () => {
    expect(requestToken(request({ rawQuery: 'pretty&token=a%2Bb&index=3' }))).toBe('a+b');
    expect(requestToken(request({ rawQuery: 'index=3&token=x&token=y' }))).toBe('x');
  });

  it('does not take another key ending in "token" for the token', () => {
    expect(requestToken(request({ rawQuery: 'mytoken=z', tokenHeader: 'h' }))).toBe('h');
  });

  it('finds a percent-encoded token key, as Go decodes keys', () => {
    expect(requestToken(request({ rawQuery: '%74oken=q', tokenHeader: 'h' }))).toBe('q');
  });

  it.each([
    ['Bearer abc', 'abc'],
    ['bearer abc', 'abc'],
    ['BEARER abc', 'abc'],
    ['Bearer  abc', 'abc'],
    ['Bearer abc def', 'abc'],
  ])('Authorization %j gives %j', (authorization, token) => {
    expect(requestToken(request({ authorization }))).toBe(token);
  });

  it.each(['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer ', 'Token abc', 'Bearerabc', ''])(
    'Authorization %j gives no token',
    (authorization) => {
      expect(requestToken(request({ authorization }))).toBeUndefined();
    },
  );

  it('bearerToken on its own', () => {
    expect(bearerToken('Bearer t')).toBe('t');
    expect(bearerToken('Basic t')).toBeUndefined();
  });
});

describe('effectiveToken', () => {
  it('uses the request token first', () => {
    expect(effectiveToken(request({ tokenHeader: 'h' }), 'default-secret')).toBe('h');
  });

  it('falls back to the default token, then to anonymous', () => {
    expect(effectiveToken(request(), 'default-secret')).toBe('default-secret');
    expect(effectiveToken(request(), '')).toBe(ANONYMOUS_SECRET);
    expect(effectiveToken(request(), undefined)).toBe('anonymous');
    expect(effectiveToken(request({ rawQuery: 'token=', authorization: 'Basic x' }), undefined)).toBe('anonymous');
  });
});
