// Request framing as RFC 9112 section 6 requires it, checked before a body is read: one body
// length, stated one way. Anything else could let a hidden second request through (smuggling),
// so it is answered 400 (501 for a transfer coding the agent cannot decode) and the connection
// closed. The uWS adapter needs all of it; llhttp (node:http) already refuses all but codings.
import { agentError } from '../core/errors.js';
import { errorTextReply, type Reply } from './reply.js';

/** What a transport saw of the framing headers, every line counted. */
export interface FramingHeaders {
  /** Number of Content-Length lines. */
  contentLengths: number;
  /** The last Content-Length value. */
  contentLength: string;
  /** Every Transfer-Encoding line, joined with commas; undefined when there is none. */
  transferEncoding: string | undefined;
}

export function emptyFraming(): FramingHeaders {
  return { contentLengths: 0, contentLength: '', transferEncoding: undefined };
}

/** Clears a reused record before the next request's headers. */
export function resetFraming(f: FramingHeaders): void {
  f.contentLengths = 0;
  f.contentLength = '';
  f.transferEncoding = undefined;
}

/** Records one header line (lower-case name) if it is a framing header. */
export function noteFramingHeader(f: FramingHeaders, name: string, value: string): void {
  if (name === 'content-length') {
    f.contentLengths++;
    f.contentLength = value;
  } else if (name === 'transfer-encoding') {
    f.transferEncoding = f.transferEncoding === undefined ? value : `${f.transferEncoding},${value}`;
  }
}

/** The reply that refuses the request's framing, or undefined when the framing is sound. */
export function framingProblem(f: FramingHeaders): Reply | undefined {
  const te = f.transferEncoding;
  if (te === undefined) {
    if (f.contentLengths === 0) return undefined;
    if (f.contentLengths > 1) return errorTextReply(agentError('FRAMING_CONTENT_LENGTHS'));
    if (!DIGITS.test(f.contentLength))
      return errorTextReply(agentError('FRAMING_BAD_CONTENT_LENGTH', { value: f.contentLength }));
    return undefined;
  }
  if (f.contentLengths > 0) return errorTextReply(agentError('FRAMING_BOTH_LENGTHS'));
  const codings = te.split(',').map((c) => c.trim().toLowerCase());
  if (codings.length === 1 && codings[0] === 'chunked') return undefined;
  const chunkedAt = codings.indexOf('chunked');
  if (chunkedAt !== codings.length - 1 || codings.some((c) => c === '')) {
    return errorTextReply(agentError('FRAMING_BAD_TRANSFER_ENCODING', { value: te }));
  }
  return errorTextReply(agentError('FRAMING_TRANSFER_ENCODING_UNSUPPORTED', { value: te }));
}

const DIGITS = /^\d+$/;

/**
 * A body over its cap is still read (and dropped) up to this much beyond the cap before the 413
 * goes out, so the connection stays usable and the client, still sending, sees the answer: closing
 * on unread data resets the connection, and the reset can discard the 413 at the client. A body
 * larger still is answered at once and the connection closed.
 */
export const OVERSIZE_DRAIN_BYTES = 4 * 1024 * 1024;
