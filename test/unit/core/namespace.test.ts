// The one namespace resolution (docs/decisions.md D2): each source beats every later one, an
// empty value counts as absent, and each endpoint's variation (no body, no token, its own
// fallback) is a matter of which sources it passes.
import { describe, expect, it } from 'vitest';
import { DEFAULT_NAMESPACE, resolveNamespace, type NamespaceSources } from '../../../src/core/namespace.js';

const ALL: NamespaceSources = { body: 'from-body', query: 'from-query', header: 'from-header', token: 'from-token' };

describe('resolveNamespace', () => {
  it.each([
    ['the body', ALL, 'from-body'],
    ['?ns', { ...ALL, body: '' }, 'from-query'],
    ['the header', { ...ALL, body: undefined, query: '' }, 'from-header'],
    ["the token's namespace", { token: 'from-token', header: '' }, 'from-token'],
    ['default', { body: '', query: undefined, header: '', token: '' }, 'default'],
  ])('%s wins over every later step', (_step, sources, expected) => {
    expect(resolveNamespace(sources, DEFAULT_NAMESPACE)).toBe(expected);
  });

  it('an endpoint without a body or a token step leaves it out', () => {
    expect(resolveNamespace({ query: undefined, header: 'h', token: 't' }, DEFAULT_NAMESPACE)).toBe('h');
    expect(resolveNamespace({ query: undefined, header: '' }, DEFAULT_NAMESPACE)).toBe('default');
  });

  it('falls back to what the endpoint says: `*` for every namespace, undefined for none asked for', () => {
    expect(resolveNamespace({ query: undefined, header: '' }, '*')).toBe('*');
    expect(resolveNamespace({ query: 'q', header: '' }, '*')).toBe('q');
    expect(resolveNamespace({ query: undefined, header: '' }, undefined)).toBeUndefined();
    expect(resolveNamespace({ header: 'h' }, undefined)).toBe('h');
  });
});
