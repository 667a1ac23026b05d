// The body of PUT /v1/txn (src/http/handlers/txn-body.ts) read as Consul's agent reads it: each op
// one of KV, Node, Service, Check or Session with the fields convertOps keeps, names matched
// case-insensitively, Go's errors for a wrong type, Consul's limits.
import { describe, expect, it } from 'vitest';
import { decodeTxn } from '../../../src/http/handlers/txn-body.js';
import { agentErrorOf } from '../../support/errors.js';

const decode = (ops: unknown): ReturnType<typeof decodeTxn> => decodeTxn(Buffer.from(JSON.stringify(ops)), 1024);

describe('decodeTxn', () => {
  it("reads api.TxnOp's kinds: KV (value base64), Node, Service, Check, Session", () => {
    const ops = decode([
      { KV: { Verb: 'set', Key: 'k', Value: Buffer.from('v').toString('base64'), Flags: 7, Index: 3 } },
      {
        Node: {
          Verb: 'cas',
          Node: { ID: 'i', Node: 'n1', Address: 'a', TaggedAddresses: { lan: 'a' }, Meta: { m: 'v' }, ModifyIndex: 9 },
        },
      },
      {
        service: {
          verb: 'set',
          node: 'n1',
          service: {
            ID: 'web-1',
            Service: 'web',
            Kind: 'connect-proxy',
            Tags: ['t'],
            Port: 80,
            Weights: { Passing: 3, Warning: 1 },
            Proxy: { DestinationServiceName: 'web', LocalServicePort: 8080, Upstreams: [{ x: 1 }] },
            Connect: { Native: true },
            ModifyIndex: 4,
          },
        },
      },
      {
        Check: {
          Verb: 'set',
          Check: {
            Node: 'n1',
            CheckID: 'c',
            Status: 'passing',
            Type: 'http',
            ServiceID: 'web-1',
            Definition: { HTTP: 'http://x/', Interval: '10s', TimeoutDuration: 2_000_000_000, TLSSkipVerify: true },
            ModifyIndex: 5,
          },
        },
      },
      { Session: { Verb: 'delete', Session: { ID: 's-1' } } },
    ]);
    expect(ops).toEqual([
      { type: 'KV', verb: 'set', key: 'k', value: { Flags: 7, Value: 'dg==' }, index: 3, session: '' },
      {
        type: 'Node',
        verb: 'cas',
        node: {
          ID: 'i',
          Node: 'n1',
          Address: 'a',
          Datacenter: '',
          TaggedAddresses: { lan: 'a' },
          Meta: { m: 'v' },
          ModifyIndex: 9,
        },
      },
      {
        type: 'Service',
        verb: 'set',
        node: 'n1',
        // Connect and a proxy's upstreams are not among the fields Consul's conversion keeps.
        service: {
          ID: 'web-1',
          Service: 'web',
          Kind: 'connect-proxy',
          Tags: ['t'],
          Port: 80,
          Weights: { Passing: 3, Warning: 1 },
          Proxy: { DestinationServiceName: 'web', LocalServicePort: 8080 },
        },
        index: 4,
      },
      {
        type: 'Check',
        verb: 'set',
        check: {
          Node: 'n1',
          CheckID: 'c',
          Status: 'passing',
          ServiceID: 'web-1',
          Definition: { HTTP: 'http://x/', TLSSkipVerify: true, Interval: '10s', Timeout: '2s' },
        },
        index: 5,
      },
      { type: 'Session', verb: 'delete', id: 's-1' },
    ]);
  });

  it("refuses Go's way: a wrong type, a body that is not an array, a bad value, too many ops", () => {
    expect(agentErrorOf(() => decode([{ Node: { Verb: 'get', Node: { Node: 5 } } }]))).toMatchObject({
      code: 'BODY_DECODE',
      message:
        'Failed to parse body: json: cannot unmarshal number into Go struct field TxnOp.Node.Node.Node of type string',
    });
    expect(agentErrorOf(() => decode({ KV: {} }))).toMatchObject({ code: 'TXN_BODY_INVALID' });
    expect(agentErrorOf(() => decode([{ KV: { Verb: 'set', Key: 'k', Value: '%%' } }]))).toMatchObject({
      code: 'TXN_BODY_INVALID',
    });
    expect(agentErrorOf(() => decode([{ KV: { Verb: 'set', Key: 'k', Value: 'x'.repeat(2000) } }]))).toMatchObject({
      code: 'TXN_VALUE_TOO_LARGE',
    });
    expect(
      agentErrorOf(() => decode(Array.from({ length: 129 }, () => ({ KV: { Verb: 'get', Key: 'k' } })))),
    ).toMatchObject({
      code: 'TXN_TOO_MANY_OPS',
    });
  });

  it('refuses whole an op of no kind it serves', () => {
    expect(agentErrorOf(() => decode([{ Intention: { Op: 'create' } }]))).toMatchObject({
      code: 'TXN_OP_UNSUPPORTED',
      message:
        'Transaction operation 0 (Intention) is not supported: KV, Node, Service, Check and Session operations are',
    });
    expect(agentErrorOf(() => decode([{ KV: null }]))).toMatchObject({ code: 'TXN_OP_UNSUPPORTED' });
  });
});
