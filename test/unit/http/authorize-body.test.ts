// The authorize body's scanner takes only bodies JSON.parse reads to the same fields, and the
// decoder answers every body as the JSON.parse route did: same fields, same 400s.
import { describe, expect, it } from 'vitest';
import {
  decodeAuthorizeBody,
  scanAuthorizeBody,
  type AuthorizeBody,
} from '../../../src/http/handlers/authorize-body.js';
import { agentErrorOf } from '../../support/errors.js';

const URI = 'spiffe://11111111-2222-3333-4444-555555555555.consul/ns/ns-5/dc/dc1/svc/src-5';
const usual = JSON.stringify({
  Target: 'svc-5',
  Namespace: 'ns-5',
  ClientCertURI: URI,
  ClientCertSerial: '3e:9d:0c:11:62:aa:4f:30',
});

/** What JSON.parse makes of a body whose keys are all known and whose values are all strings. */
function viaJsonParse(text: string): AuthorizeBody | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  const out: AuthorizeBody = { Target: '', ClientCertURI: '', Namespace: '' };
  for (const [key, value] of Object.entries(parsed)) {
    if (typeof value !== 'string') return undefined;
    if (key === 'Target' || key === 'ClientCertURI' || key === 'Namespace') out[key] = value;
    else if (key !== 'ClientCertSerial') return undefined;
  }
  return out;
}

const taken = [
  usual,
  '{}',
  '{"Target":"db"}',
  '{"ClientCertURI":"x y","Target":"db"}',
  '{"Target":"a","Target":"b","Namespace":""}',
  '{"Namespace":"Target","Target":"Namespace"}',
  '{"ClientCertSerial":"","Namespace":"team-a","Target":"~!#$%&\'()*+-./:;<=>?@[]^_`{|}"}',
];

const refused = [
  ' \t\r\n{ } \n',
  '{ "Target":"db"}',
  '{"Target" :"db"}',
  '{"Target":"db" }',
  '',
  ' ',
  '[]',
  'null',
  '"x"',
  '{',
  '{"Target":"db"',
  '{"Target":"db",}',
  '{"Target":"db"}}',
  '{"Target":"db"} x',
  '{"Target":"db"}{}',
  '{,"Target":"db"}',
  '{"Target" "db"}',
  '{"Target":"db" "Namespace":"x"}',
  '{"Target":db}',
  '{"Target":null}',
  '{"Target":5}',
  '{"Target":["db"]}',
  '{"target":"db"}',
  '{"TARGET":"db"}',
  '{"Targetx":"db"}',
  '{"Extra":"db"}',
  '{"__proto__":"db"}',
  '{"Target":"d\\u0062"}',
  '{"Target":"d\\"b"}',
  '{"Tar\\u0067et":"db"}',
  '{"Target":"d\tb"}',
  '{"Target":"d\nb"}',
  '{"Target":"d\u007fb"}',
  '{"Target":"dé"}',
  '\ufeff{"Target":"db"}',
  '{"Target":"db"\u00a0}',
  '{"Target":"db","ClientCertSerial":7}',
  '{"Target":"db","ClientCertURI":{}}',
  '{"Target":"a","Target":"b","Target":"c","Target":"d","Target":"e"}',
];

describe('scanAuthorizeBody', () => {
  it.each(taken)('reads %j as JSON.parse does', (text) => {
    expect(scanAuthorizeBody(text)).toEqual(viaJsonParse(text));
  });

  it.each(refused)('hands %j to the general decoder', (text) => {
    expect(scanAuthorizeBody(text)).toBeUndefined();
  });

  it('decodes every body JSON.parse reads to the same fields, over every one-character edit of the usual body', () => {
    const alphabet = ['"', '\\', ',', ':', '{', '}', ' ', '\n', 'a', '\u0000', '\u00e9', '\u007f'];
    let scanned = 0;
    for (let i = 0; i <= usual.length; i++) {
      for (const c of alphabet) {
        for (const text of [
          usual.slice(0, i) + c + usual.slice(i),
          usual.slice(0, i) + c + usual.slice(i + 1),
          usual.slice(0, i) + usual.slice(i + 1),
        ]) {
          // The scanner sees latin1 text of UTF-8 bytes, as the route hands it.
          const latin1 = Buffer.from(text).toString('latin1');
          const fields = scanAuthorizeBody(latin1);
          const expected = viaJsonParse(text);
          if (expected !== undefined) expect(decodeAuthorizeBody(Buffer.from(text))).toEqual(expected);
          if (fields === undefined) continue;
          scanned++;
          expect(fields).toEqual(expected);
        }
      }
    }
    expect(scanned).toBeGreaterThan(500);
  });
});

describe('decodeAuthorizeBody', () => {
  const decode = (text: string): AuthorizeBody => decodeAuthorizeBody(Buffer.from(text));
  const failure = (text: string): string => agentErrorOf(() => decode(text)).message;

  it('reads fields past the scanner as before: escapes, non-ASCII, null, keys in another case', () => {
    expect(decode('{"Target":"d\\u0062","Namespace":null}')).toEqual({
      Target: 'db',
      ClientCertURI: '',
      Namespace: '',
    });
    expect(decode('{"Target":"dé"}')).toEqual({ Target: 'dé', ClientCertURI: '', Namespace: '' });
    expect(decode('{"target":"db","clientcerturi":"u"}')).toEqual({ Target: 'db', ClientCertURI: 'u', Namespace: '' });
    expect(decode(usual)).toEqual(viaJsonParse(usual));
    expect(decode('{"Target":"a","Target":"b","Target":"c","Target":"d","Target":"e"}')).toMatchObject({ Target: 'e' });
    expect(decode('{ "Namespace" : "x" }\n')).toEqual({ Target: '', ClientCertURI: '', Namespace: 'x' });
  });

  it('words a malformed body as Consul does', () => {
    expect(failure('')).toBe('Request decode failed: EOF');
    expect(failure('[]')).toBe(
      'Request decode failed: json: cannot unmarshal array into Go value of type structs.ConnectAuthorizeRequest',
    );
    expect(failure('{"Target":5}')).toBe(
      'Request decode failed: json: cannot unmarshal number into Go struct field ConnectAuthorizeRequest.Target of type string',
    );
    expect(failure('{"Target":"db","ClientCertSerial":7}')).toBe(
      'Request decode failed: json: cannot unmarshal number into Go struct field ConnectAuthorizeRequest.ClientCertSerial of type string',
    );
    expect(failure('{"Extra":"x"}')).toBe('Request decode failed: json: unknown field "Extra"');
  });
});
