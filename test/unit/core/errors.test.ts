import { describe, expect, it } from 'vitest';
import { AgentError, invalid, isAgentError, notFound } from '../../../src/core/errors.js';

describe('AgentError', () => {
  it('carries a code, a kind, a message and a cause', () => {
    const cause = new Error('disk full');
    const err = new AgentError('WAL_WRITE', 'internal', 'write failed', { cause });
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('AgentError');
    expect(err.code).toBe('WAL_WRITE');
    expect(err.kind).toBe('internal');
    expect(err.message).toBe('write failed');
    expect(err.cause).toBe(cause);
    expect(err.stack).toContain('write failed');
  });

  it('invalid() makes an invalid-kind error', () => {
    const err = invalid('BAD', 'Missing key name');
    expect(err).toMatchObject({ code: 'BAD', kind: 'invalid', message: 'Missing key name' });
  });

  it('notFound() defaults to an empty message', () => {
    expect(notFound('NF')).toMatchObject({ code: 'NF', kind: 'not-found', message: '' });
    expect(notFound('NF', 'ACL not found').message).toBe('ACL not found');
  });

  it('isAgentError tells AgentErrors from everything else', () => {
    expect(isAgentError(invalid('X', 'y'))).toBe(true);
    expect(isAgentError(new Error('x'))).toBe(false);
    expect(isAgentError({ code: 'X', kind: 'invalid', message: 'y' })).toBe(false);
    expect(isAgentError(undefined)).toBe(false);
    expect(isAgentError('Permission denied')).toBe(false);
  });
});
