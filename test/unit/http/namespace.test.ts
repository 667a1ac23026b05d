// The namespace steps an HTTP request carries: `?ns` and the namespace header, absent when not sent.
import { describe, expect, it } from 'vitest';
import { requestNamespace, requestNamespaces } from '../../../src/http/namespace.js';
import { request } from './support.js';

describe('requestNamespaces', () => {
  it('reads ?ns and the namespace header', () => {
    expect(requestNamespaces(request({ rawQuery: 'ns=q&pretty', namespaceHeader: 'h' }))).toEqual({
      query: 'q',
      header: 'h',
    });
  });

  it('has neither when the request sends neither', () => {
    const { query, header } = requestNamespaces(request({ rawQuery: 'pretty' }));
    expect(query).toBeUndefined();
    expect(header).toBe('');
  });
});

describe('requestNamespace', () => {
  it('takes ?ns, then the header, then the token, then the fallback', () => {
    expect(requestNamespace(request({ rawQuery: 'ns=q', namespaceHeader: 'h' }), 't', 'default')).toBe('q');
    expect(requestNamespace(request({ namespaceHeader: 'h' }), 't', 'default')).toBe('h');
    expect(requestNamespace(request({}), 't', 'default')).toBe('t');
    expect(requestNamespace(request({}), undefined, '*')).toBe('*');
    expect(requestNamespace(request({}), undefined, undefined)).toBeUndefined();
  });
});
