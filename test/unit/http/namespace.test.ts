// The namespace steps an HTTP request carries: `?ns` and the namespace header, absent when not sent.
import { describe, expect, it } from 'vitest';
import { requestNamespaces } from '../../../src/http/namespace.js';
import { request } from './support.js';

describe('requestNamespaces', () => {
  it('reads ?ns and the namespace header', () => {
    expect(requestNamespaces(request({ rawQuery: 'ns=q&pretty', namespaceHeader: 'h' }))).toEqual({ query: 'q', header: 'h' });
  });

  it('has neither when the request sends neither', () => {
    const { query, header } = requestNamespaces(request({ rawQuery: 'pretty' }));
    expect(query).toBeUndefined();
    expect(header).toBe('');
  });
});
