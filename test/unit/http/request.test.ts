import { describe, expect, it } from 'vitest';
import { EMPTY_QUERY } from '../../../src/http/query.js';
import { request } from './support.js';

describe('ApiRequest', () => {
  it('runs every abort handler once, in order; abort is idempotent', () => {
    const req = request();
    const calls: string[] = [];
    req.onAbort(() => calls.push('a'));
    req.onAbort(() => calls.push('b'));
    expect(req.aborted).toBe(false);
    req.abort();
    expect(req.aborted).toBe(true);
    expect(calls).toEqual(['a', 'b']);
    req.abort();
    req.abort();
    expect(calls).toEqual(['a', 'b']);
  });

  it('runs a handler registered after the abort at once (cleanup after an await)', () => {
    const req = request();
    req.abort();
    let ran = 0;
    req.onAbort(() => ran++);
    expect(ran).toBe(1);
  });

  it('abort with no handlers just marks the request', () => {
    const req = request();
    req.abort();
    expect(req.aborted).toBe(true);
  });

  it('exposes method, rest and body as given', () => {
    const body = Buffer.from('v');
    const req = request({ method: 'PUT' }, 'a/b', body);
    expect(req.method).toBe('PUT');
    expect(req.rest).toBe('a/b');
    expect(req.body).toBe(body);
  });

  it('parses the query once, and shares the empty query when there is none', () => {
    const req = request({ rawQuery: 'index=4' });
    expect(req.query).toBe(req.query);
    expect(req.query.get('index')).toBe('4');
    expect(request().query).toBe(EMPTY_QUERY);
  });

  it('is pretty when ?pretty is present with any value', () => {
    expect(request({ rawQuery: 'pretty' }).pretty).toBe(true);
    expect(request({ rawQuery: 'pretty=' }).pretty).toBe(true);
    expect(request({ rawQuery: 'pretty=false' }).pretty).toBe(true);
    expect(request({ rawQuery: 'recurse' }).pretty).toBe(false);
    expect(request().pretty).toBe(false);
  });
});
