import { describe, expect, it } from 'vitest';
import { emptyFraming, framingProblem, noteFramingHeader, type FramingHeaders } from '../../../src/http/framing.js';

function framing(lines: [string, string][]): FramingHeaders {
  const f = emptyFraming();
  for (const [name, value] of lines) noteFramingHeader(f, name, value);
  return f;
}

const statusOf = (lines: [string, string][]): number | undefined => framingProblem(framing(lines))?.status;

describe('framingProblem (RFC 9112 section 6)', () => {
  it('accepts no body framing, one numeric Content-Length, or chunked alone in any case', () => {
    expect(statusOf([])).toBeUndefined();
    expect(statusOf([['content-length', '0']])).toBeUndefined();
    expect(statusOf([['content-length', '12345']])).toBeUndefined();
    expect(statusOf([['transfer-encoding', 'chunked']])).toBeUndefined();
    expect(statusOf([['transfer-encoding', ' Chunked ']])).toBeUndefined();
  });

  it('refuses repeated, negative, signed, listed or non-numeric Content-Length with 400', () => {
    expect(
      statusOf([
        ['content-length', '5'],
        ['content-length', '6'],
      ]),
    ).toBe(400);
    expect(
      statusOf([
        ['content-length', '5'],
        ['content-length', '5'],
      ]),
    ).toBe(400);
    for (const value of ['-1', '+5', '5, 5', 'abc', '', '0x10', '1e3'])
      expect(statusOf([['content-length', value]]), value).toBe(400);
  });

  it('refuses Content-Length beside Transfer-Encoding', () => {
    const reply = framingProblem(
      framing([
        ['content-length', '3'],
        ['transfer-encoding', 'chunked'],
      ]),
    );
    expect(reply).toMatchObject({
      status: 400,
      body: 'Bad request framing: both Content-Length and Transfer-Encoding\n',
    });
  });

  it('refuses chunked that is not the last coding, or applied twice, or missing, with 400', () => {
    for (const te of ['chunked, identity', 'gzip', 'identity', '', 'chunked, chunked', 'gzip, , chunked'])
      expect(statusOf([['transfer-encoding', te]]), te).toBe(400);
    expect(
      statusOf([
        ['transfer-encoding', 'chunked'],
        ['transfer-encoding', 'chunked'],
      ]),
    ).toBe(400);
  });

  it('answers 501 for a coding before chunked, naming it', () => {
    const reply = framingProblem(framing([['transfer-encoding', 'gzip, chunked']]));
    expect(reply).toMatchObject({
      status: 501,
      body: 'Transfer-Encoding "gzip, chunked" is not supported: send the body with chunked alone\n',
    });
    expect(
      statusOf([
        ['transfer-encoding', 'gzip'],
        ['transfer-encoding', 'chunked'],
      ]),
    ).toBe(501);
  });

  it('ignores other headers', () => {
    expect(
      statusOf([
        ['content-type', 'x'],
        ['connection', 'close'],
      ]),
    ).toBeUndefined();
  });
});
