// Incremental HTTP/1.1 response parser for raw sockets (the fan-out bench holds 15k of them, too
// many for an HTTP client library to stay cheap). Frames by Content-Length or chunked encoding;
// a response with neither ends when the server closes the connection.

export interface ParsedResponse {
  status: number;
  /** Header names lower-cased; a repeated header keeps its last value. */
  headers: Map<string, string>;
  body: Buffer;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const CRLF = Buffer.from('\r\n');
// A KV response head is a few hundred bytes; anything far beyond that is not an HTTP answer.
const MAX_HEAD_BYTES = 16 * 1024;

export class ResponseParser {
  private buffer: Buffer = Buffer.alloc(0);
  private head: { status: number; headers: Map<string, string>; length?: number; chunked: boolean } | undefined;

  /** Adds bytes; returns the response once it is complete. Throws on malformed input. */
  feed(chunk: Buffer): ParsedResponse | undefined {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    if (this.head === undefined) {
      const end = this.buffer.indexOf(HEAD_END);
      if (end < 0) {
        if (this.buffer.length > MAX_HEAD_BYTES) throw new Error('response head too large');
        return undefined;
      }
      this.head = parseHead(this.buffer.subarray(0, end).toString('latin1'));
      this.buffer = this.buffer.subarray(end + HEAD_END.length);
    }
    const { status, headers, length, chunked } = this.head;
    // 1xx, 204 and 304 never carry a body, whatever the headers say.
    if (status < 200 || status === 204 || status === 304) return { status, headers, body: Buffer.alloc(0) };
    if (length !== undefined) {
      return this.buffer.length >= length ? { status, headers, body: this.buffer.subarray(0, length) } : undefined;
    }
    if (chunked) {
      const body = decodeChunked(this.buffer);
      return body === undefined ? undefined : { status, headers, body };
    }
    return undefined;
  }

  /** The connection closed: a close-delimited body is complete now; anything else was cut short. */
  finish(): ParsedResponse | undefined {
    const head = this.head;
    if (head === undefined || head.length !== undefined || head.chunked) return undefined;
    return { status: head.status, headers: head.headers, body: this.buffer };
  }
}

function parseHead(text: string): { status: number; headers: Map<string, string>; length?: number; chunked: boolean } {
  const lines = text.split('\r\n');
  const statusLine = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(lines[0] ?? '');
  if (statusLine?.[1] === undefined) throw new Error(`bad status line: ${JSON.stringify(lines[0])}`);
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new Error(`bad header line: ${JSON.stringify(line)}`);
    headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const chunked = /(?:^|,)\s*chunked\s*$/i.test(headers.get('transfer-encoding') ?? '');
  const lengthText = headers.get('content-length');
  // Transfer-Encoding wins over Content-Length (RFC 9112 §6.3).
  if (chunked || lengthText === undefined) return { status: Number(statusLine[1]), headers, chunked };
  if (!/^\d+$/.test(lengthText)) throw new Error(`bad Content-Length: ${lengthText}`);
  return { status: Number(statusLine[1]), headers, length: Number(lengthText), chunked };
}

/** The decoded body once the last chunk and trailers are in `data`, else undefined. */
function decodeChunked(data: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = data.indexOf(CRLF, at);
    if (lineEnd < 0) return undefined;
    const size = Number.parseInt(data.subarray(at, lineEnd).toString('latin1').split(';')[0] ?? '', 16);
    if (!Number.isFinite(size) || size < 0) throw new Error('bad chunk size');
    at = lineEnd + CRLF.length;
    if (size === 0) {
      // Trailers (usually none) end with an empty line.
      return data.indexOf(HEAD_END, at - CRLF.length) >= 0 ? Buffer.concat(parts) : undefined;
    }
    if (data.length < at + size + CRLF.length) return undefined;
    parts.push(data.subarray(at, at + size));
    at += size + CRLF.length;
  }
}
