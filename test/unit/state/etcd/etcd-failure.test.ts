// How an etcd error is read: the agent answers 503 No cluster leader for what another attempt or
// an election may cure, 503 "out of space" for a spent quota (no write until an operator frees
// space), and 500 only for what etcd refused outright.
import { describe, expect, it } from 'vitest';
import { etcdFailure } from '../../../../src/state/etcd/etcd-client.js';

describe('etcdFailure', () => {
  it.each([
    // A member with no quorum answers a txn with its own context's deadline (seen in CI with two of three killed).
    '2 UNKNOWN: context deadline exceeded',
    '14 UNAVAILABLE: etcdserver: no leader',
    'etcdserver: leader changed',
    'etcdserver: request timed out',
    'etcdserver: not capable',
    'etcdserver: unhealthy cluster',
  ])('reads "%s" as unavailable', (message) => {
    expect(etcdFailure(new Error(message))).toBe('unavailable');
  });

  it("reads etcd's spent space quota as no-space, and its rate limit (the same gRPC code) as other", () => {
    expect(etcdFailure(new Error('8 RESOURCE_EXHAUSTED: etcdserver: mvcc: database space exceeded'))).toBe('no-space');
    expect(etcdFailure(new Error('8 RESOURCE_EXHAUSTED: etcdserver: too many requests'))).toBe('other');
  });

  it('reads a size refusal as too large, and anything else as other', () => {
    expect(etcdFailure(new Error('etcdserver: request is too large'))).toBe('too-large');
    expect(etcdFailure(new Error('etcdserver: too many operations in txn request'))).toBe('too-large');
    expect(etcdFailure(new Error('etcdserver: permission denied'))).toBe('other');
    expect(etcdFailure('not an error')).toBe('other');
  });
});
