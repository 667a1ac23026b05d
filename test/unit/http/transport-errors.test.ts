// The refusals the transports still write as literals (framing.ts, node-server.ts, uws-server.ts)
// have catalogue codes with the same bytes, so that raising them by code changes no answer.
import { describe, expect, it } from 'vitest';
import { agentError } from '../../../src/core/errors.js';
import { emptyFraming, framingProblem, noteFramingHeader, type FramingHeaders } from '../../../src/http/framing.js';
import { errorTextReply, textReply } from '../../../src/http/reply.js';
import { compileRoutes } from '../../../src/http/routes.js';
import { testGate } from './support.js';

function framing(lines: [string, string][]): FramingHeaders {
  const f = emptyFraming();
  for (const [name, value] of lines) noteFramingHeader(f, name, value);
  return f;
}

describe('transport refusals by code', () => {
  it('framing: each refusal is its code rendered', () => {
    expect(
      framingProblem(
        framing([
          ['content-length', '5'],
          ['content-length', '6'],
        ]),
      ),
    ).toEqual(errorTextReply(agentError('FRAMING_CONTENT_LENGTHS')));
    expect(framingProblem(framing([['content-length', '0x10']]))).toEqual(
      errorTextReply(agentError('FRAMING_BAD_CONTENT_LENGTH', { value: '0x10' })),
    );
    expect(
      framingProblem(
        framing([
          ['content-length', '3'],
          ['transfer-encoding', 'chunked'],
        ]),
      ),
    ).toEqual(errorTextReply(agentError('FRAMING_BOTH_LENGTHS')));
    expect(framingProblem(framing([['transfer-encoding', 'chunked, gzip']]))).toEqual(
      errorTextReply(agentError('FRAMING_BAD_TRANSFER_ENCODING', { value: 'chunked, gzip' })),
    );
    expect(framingProblem(framing([['transfer-encoding', 'gzip, chunked']]))).toEqual(
      errorTextReply(agentError('FRAMING_TRANSFER_ENCODING_UNSUPPORTED', { value: 'gzip, chunked' })),
    );
  });

  it("the adapters' own 400s and the body caps: the same bytes as their codes", () => {
    expect(textReply(400, 'Invalid URL path: malformed percent-encoding')).toEqual(
      errorTextReply(agentError('HTTP_BAD_PATH_ESCAPE')),
    );
    expect(textReply(400, 'Bad request: missing required Host header\n')).toEqual(
      errorTextReply(agentError('HTTP_MISSING_HOST')),
    );
    expect(textReply(400, 'Bad request: more than one Host header (RFC 9112 section 3.2)\n')).toEqual(
      errorTextReply(agentError('HTTP_DUPLICATE_HOST')),
    );
    expect(textReply(501, 'Method not implemented: methods are case-sensitive (RFC 9110 section 9.1)\n')).toEqual(
      errorTextReply(agentError('HTTP_METHOD_UNKNOWN')),
    );
    expect(
      textReply(
        411,
        'Length required: this listener takes request bodies with Content-Length only (README, "HTTP transports")\n',
      ),
    ).toEqual(errorTextReply(agentError('HTTP_LENGTH_REQUIRED')));
    const ok = { handler: () => ({ status: 200 }), acl: 'none' as const };
    const [route] = compileRoutes([{ path: '/v1/x', methods: { PUT: ok } }], testGate(), 1024);
    expect(errorTextReply(route!.bodyTooLarge(2048, 1024))).toEqual(
      errorTextReply(agentError('HTTP_BODY_TOO_LARGE', { size: 2048, max: 1024 })),
    );
  });
});
