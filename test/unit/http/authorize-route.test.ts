// The authorize route through the route table, without a socket: the order of its answers (every
// 400 before the token is looked at, the partition after the ACL step), the checked-body memo as
// a pure memo (a decision follows the intentions; a failing body fails every time), and X-Cache.
import { describe, expect, it } from 'vitest';
import { buildIntentionIndex, type IntentionIndex } from '../../../src/connect/intentions/index.js';
import { intentionKey } from '../../../src/connect/intentions/model.js';
import { normalizeIntention, storedIntention, type IntentionInput } from '../../../src/connect/intentions/validate.js';
import { systemClock } from '../../../src/core/clock.js';
import { Metrics } from '../../../src/core/metrics.js';
import { authorizeRoutes } from '../../../src/http/handlers/authorize.js';
import type { Reply } from '../../../src/http/reply.js';
import { compileRoutes } from '../../../src/http/routes.js';
import { agentErrorOf } from '../../support/errors.js';
import { request, testGate } from './support.js';

const uri = (service: string, partition?: string): string =>
  `spiffe://11111111-2222-3333-4444-555555555555.consul${partition === undefined ? '' : `/ap/${partition}`}/ns/default/dc/dc1/svc/${service}`;

function indexOf(...inputs: IntentionInput[]): IntentionIndex {
  const rows = inputs.map((input, i) => {
    const value = storedIntention(normalizeIntention(input, 'default'));
    return {
      key: intentionKey(value.DestinationNS, value.DestinationName, value.SourceNS, value.SourceName),
      value,
      createIndex: i + 1,
      modifyIndex: i + 1,
    };
  });
  return buildIntentionIndex(rows, rows.length + 1);
}

function route(connectEnabled = true) {
  let index = indexOf();
  const metrics = new Metrics(systemClock);
  const [compiled] = compileRoutes(
    authorizeRoutes({ connectEnabled, intentions: { current: () => index }, cacheMaxEntries: 100, metrics }),
    testGate(),
    1 << 20,
  );
  const post = compiled?.handlers.get('POST');
  if (post === undefined) throw new Error('no POST handler');
  return {
    call: (body: unknown, token = 'w:service', rawQuery = '') =>
      post(
        request(
          { method: 'POST', tokenHeader: token, rawQuery },
          '',
          Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
        ),
      ) as Reply,
    setIntentions: (...inputs: IntentionInput[]) => {
      index = indexOf(...inputs);
    },
    metrics,
  };
}

const failure = (fn: () => unknown): string => {
  const err = agentErrorOf(fn);
  return `${err.kind}: ${err.message}`;
};
const decision = (reply: Reply): unknown => JSON.parse(Buffer.from(reply.body as Uint8Array).toString());

describe('authorize route: the order of its answers', () => {
  it('connect disabled comes first, then ?partition, both before the body is read', () => {
    expect(failure(() => route(false).call('[]', 'unknown', 'partition=other'))).toBe(
      'invalid: Connect must be enabled in order to use this endpoint',
    );
    expect(failure(() => route().call('[]', 'unknown', 'partition=other'))).toBe(
      'invalid: Invalid query parameter: "partition" - Partitions are a Consul Enterprise feature',
    );
  });

  it('every malformed body is a 400 before the token is looked at', () => {
    const r = route();
    expect(failure(() => r.call('[]', 'unknown'))).toBe(
      'invalid: Request decode failed: json: cannot unmarshal array into Go value of type structs.ConnectAuthorizeRequest',
    );
    expect(failure(() => r.call({ Target: 5 }, 'unknown'))).toBe(
      'invalid: Request decode failed: json: cannot unmarshal number into Go struct field ConnectAuthorizeRequest.Target of type string',
    );
    expect(failure(() => r.call({}, 'unknown'))).toBe('invalid: Target service must be specified');
    expect(failure(() => r.call({ Target: 'db', ClientCertURI: 'tubes' }, 'unknown'))).toBe(
      'invalid: ClientCertURI not a valid Connect identifier',
    );
    expect(failure(() => r.call({ Target: 'db', ClientCertURI: uri('web') }, 'unknown'))).toBe(
      'permission-denied: ACL not found',
    );
  });

  it('then service:write on the Target, then the partition', () => {
    const r = route();
    const foreign = { Target: 'db', ClientCertURI: uri('web', 'other') };
    expect(agentErrorOf(() => r.call(foreign, 'r:service')).kind).toBe('permission-denied');
    expect(failure(() => r.call(foreign))).toBe('invalid: Mismatched partitions: "other" != "default"');
  });
});

describe('authorize route: the checked-body memo and X-Cache', () => {
  it('a remembered body is decided again from the current intentions', () => {
    const r = route();
    const body = { Target: 'db', ClientCertURI: uri('web') };
    expect(decision(r.call(body))).toEqual({ Authorized: false, Reason: 'Default behavior configured by ACLs' });
    r.setIntentions({ SourceName: 'web', DestinationName: 'db', Action: 'allow' });
    expect(decision(r.call(body))).toMatchObject({ Authorized: true });
  });

  it('a body that fails its checks fails every time', () => {
    const r = route();
    for (let i = 0; i < 2; i++)
      expect(failure(() => r.call({ Target: 'db', ClientCertURI: 'tubes' }))).toBe(
        'invalid: ClientCertURI not a valid Connect identifier',
      );
  });

  it('MISS then HIT per destination, whatever the body; ?ns picks the destination namespace', () => {
    const r = route();
    const headers = (reply: Reply): unknown => reply.headers;
    expect(headers(r.call({ Target: 'db', ClientCertURI: uri('web') }))).toEqual([['X-Cache', 'MISS']]);
    expect(headers(r.call({ Target: 'db', ClientCertURI: uri('api'), ClientCertSerial: '01' }))).toEqual([
      ['X-Cache', 'HIT'],
      ['Age', '0'],
    ]);
    expect(headers(r.call({ Target: 'db', ClientCertURI: uri('web') }, 'w:service', 'ns=other'))).toEqual([
      ['X-Cache', 'MISS'],
    ]);
  });
});
