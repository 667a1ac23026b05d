import { describe, expect, it } from 'vitest';
import { AgentError } from '../../../src/core/errors.js';
import { jsonObjectDecoder } from '../../../src/http/body.js';
import { agentErrorOf } from '../../support/errors.js';

const decode = jsonObjectDecoder({
  prefix: 'Request decode failed',
  typeName: 'structs.ConnectAuthorizeRequest',
  fields: ['Target', 'ClientCertURI', 'ClientCertSerial'],
});

function failure(body: string | undefined): AgentError {
  try {
    decode(body === undefined ? undefined : Buffer.from(body));
  } catch (err) {
    expect(err).toBeInstanceOf(AgentError);
    const e = err as AgentError;
    expect([e.code, e.kind]).toEqual(['BODY_DECODE', 'invalid']);
    return e;
  }
  throw new Error(`decoding ${JSON.stringify(body)} did not throw`);
}

describe('jsonObjectDecoder', () => {
  it('maps field names case-insensitively to their canonical spelling', () => {
    const out = decode(Buffer.from('{"target":"db","CLIENTCERTURI":"spiffe://x","ClientCertSerial":"01"}'));
    expect(out).toEqual({ Target: 'db', ClientCertURI: 'spiffe://x', ClientCertSerial: '01' });
  });

  it('keeps values of any JSON type for the handler to check', () => {
    expect(decode(Buffer.from('{"Target":null,"ClientCertURI":5,"ClientCertSerial":{"a":[1]}}'))).toEqual({
      Target: null,
      ClientCertURI: 5,
      ClientCertSerial: { a: [1] },
    });
  });

  it('a later spelling of the same field wins, as in Go', () => {
    expect(decode(Buffer.from('{"target":"a","Target":"b"}'))).toEqual({ Target: 'b' });
  });

  it('{} and null decode to an empty object', () => {
    expect(decode(Buffer.from('{}'))).toEqual({});
    expect(decode(Buffer.from('null'))).toEqual({});
    expect(decode(Buffer.from(' \n null \n'))).toEqual({});
  });

  it.each([undefined, '', '   ', '\n\t\r '])('body %j → "Request decode failed: EOF"', (body) => {
    expect(failure(body).message).toBe('Request decode failed: EOF');
  });

  it.each([
    ['[]', 'array'],
    ['[{"Target":"x"}]', 'array'],
    ['"text"', 'string'],
    ['42', 'number'],
    ['-1.5', 'number'],
    ['true', 'bool'],
    ['false', 'bool'],
  ])('%s → cannot unmarshal %s', (body, kind) => {
    expect(failure(body).message).toBe(
      `Request decode failed: json: cannot unmarshal ${kind} into Go value of type structs.ConnectAuthorizeRequest`,
    );
  });

  it('rejects an unknown field, named as sent', () => {
    expect(failure('{"Target":"db","Foo":1}').message).toBe('Request decode failed: json: unknown field "Foo"');
    expect(failure('{"__proto__":{}}').message).toBe('Request decode failed: json: unknown field "__proto__"');
  });

  it('a syntax error is a 400-kind error behind the prefix', () => {
    const err = failure('{"Target": ');
    expect(err.code).toBe('BODY_DECODE');
    expect(err.message.startsWith('Request decode failed: ')).toBe(true);
    expect(err.message.length).toBeGreaterThan('Request decode failed: '.length);
  });

  it('uses each decoder its own prefix and type name', () => {
    const policy = jsonObjectDecoder({
      prefix: 'Policy decoding failed',
      typeName: 'structs.ACLPolicy',
      fields: ['Name'],
    });
    const failed = (body: string) => {
      const err = agentErrorOf(() => policy(Buffer.from(body)));
      return [err.code, err.message];
    };
    expect(failed('[]')).toEqual([
      'BODY_DECODE',
      'Policy decoding failed: json: cannot unmarshal array into Go value of type structs.ACLPolicy',
    ]);
    expect(failed('{"Target":"x"}')).toEqual(['BODY_DECODE', 'Policy decoding failed: json: unknown field "Target"']);
  });
});
