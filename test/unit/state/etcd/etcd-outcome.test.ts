// Which failed attempts of a write may have been applied (docs/decisions.md#write-outcome-unknown):
// sent and never answered, or etcd's own "timed out"; and the one mapping of a txn of unknown
// outcome, 503 "may have been applied", apart from `No cluster leader` (nothing applied).
import { BrokenCircuitError } from 'cockatiel';
import {
  GRPCCancelledError,
  GRPCDeadlineExceededError,
  GRPCResourceExhastedError,
  GRPCUnavailableError,
  GRPCUnknownError,
  EtcdPermissionDeniedError,
} from 'etcd3';
import { describe, expect, it } from 'vitest';
import { EtcdOutcomeUnknown, etcdFailure, unanswered } from '../../../../src/state/etcd/etcd-client.js';
import { etcdError } from '../../../../src/state/etcd/etcd-errors.js';

describe('unanswered', () => {
  it.each([
    [
      'a deadline passed on a call that went out',
      new GRPCDeadlineExceededError(
        '4 DEADLINE_EXCEEDED: Deadline exceeded after 0.501s,LB pick: 0.001s,remote_addr=127.0.0.1:2379',
      ),
    ],
    ['a cancelled call', new GRPCCancelledError('1 CANCELLED: Call cancelled')],
    ['the connection dropped under the call', new GRPCUnavailableError('14 UNAVAILABLE: Connection dropped')],
    ['a reset connection', new GRPCUnavailableError('14 UNAVAILABLE: read ECONNRESET')],
    ["etcd's proposal timed out", new GRPCUnavailableError('14 UNAVAILABLE: etcdserver: request timed out')],
    [
      'the same, after a leader failed',
      new GRPCUnavailableError(
        '14 UNAVAILABLE: etcdserver: request timed out, possibly due to previous leader failure',
      ),
    ],
    ['a proposal etcd cancelled', new GRPCCancelledError('1 CANCELLED: etcdserver: request cancelled')],
    ['the leader changed under the proposal', new GRPCUnavailableError('14 UNAVAILABLE: etcdserver: leader changed')],
  ])('reads %s as perhaps applied', (_, err) => {
    expect(unanswered(err)).toBe(true);
  });

  it.each([
    [
      'a deadline passed waiting for a connection',
      new GRPCDeadlineExceededError('4 DEADLINE_EXCEEDED: Deadline exceeded after 0.501s,Waiting for LB pick'),
    ],
    [
      'no connection',
      new GRPCUnavailableError(
        '14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:2379',
      ),
    ],
    ['a stream etcd refused', new GRPCUnavailableError('14 UNAVAILABLE: Stream refused by server')],
    ['every member passed by', new GRPCUnavailableError('no etcd member is answering')],
    ['a member skipped', new BrokenCircuitError()],
    ['no leader', new GRPCUnavailableError('14 UNAVAILABLE: etcdserver: no leader')],
    [
      'a member without a leader past its context deadline (raft took no proposal)',
      new GRPCUnknownError('2 UNKNOWN: context deadline exceeded'),
    ],
    ['too many requests', new GRPCResourceExhastedError('8 RESOURCE_EXHAUSTED: etcdserver: too many requests')],
    ['a spent quota', new GRPCResourceExhastedError('8 RESOURCE_EXHAUSTED: etcdserver: mvcc: database space exceeded')],
    ['permission denied', new EtcdPermissionDeniedError('etcdserver: permission denied')],
    ['a size refusal', new Error('etcdserver: request is too large')],
  ])('reads %s as nothing applied', (_, err) => {
    expect(unanswered(err)).toBe(false);
  });
});

describe('a txn of unknown outcome', () => {
  it('is its own failure, mapped to 503 "may have been applied", not No cluster leader', () => {
    const err = new EtcdOutcomeUnknown(new GRPCUnavailableError('no etcd member is answering'));
    expect(err.message).toBe('the transaction may have been applied: no etcd member is answering');
    expect(err.stack).toBe(`EtcdOutcomeUnknown: ${err.message}`);
    expect(etcdFailure(err)).toBe('outcome-unknown');
    const mapped = etcdError(err);
    expect(mapped).toMatchObject({ code: 'STATE_WRITE_OUTCOME_UNKNOWN', kind: 'unavailable', cause: err });
    expect(mapped.message).toMatch(/^The write may have been applied: .*Read it back, or compare its ModifyIndex/);
    // What applied nothing keeps its text.
    expect(etcdError(new GRPCUnavailableError('no etcd member is answering'))).toMatchObject({
      code: 'STATE_NO_LEADER',
      message: 'No cluster leader',
    });
  });
});
