// One keep-alive HTTP/1.1 connection that sends prepared requests one at a time and reads just
// enough of each answer (status, Content-Length or chunked end) to know it is complete: the load
// generator's own cost per request stays small next to the agent's.
import { connect, type Socket } from 'node:net';
import type { Outcome } from './types.js';
import type { Channel } from './scheduler.js';

export interface HttpTarget {
  readonly host: string;
  readonly port: number;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const CHUNKED_END = Buffer.from('0\r\n\r\n');
const EMPTY = Buffer.alloc(0);
/** Header names as servers send them, in both usual spellings. */
const CONTENT_LENGTH = [Buffer.from('\r\nContent-Length:'), Buffer.from('\r\ncontent-length:')];
const TRANSFER_ENCODING = [
  Buffer.from('\r\nTransfer-Encoding: chunked'),
  Buffer.from('\r\ntransfer-encoding: chunked'),
];
const CONNECTION_CLOSE = [Buffer.from('\r\nConnection: close'), Buffer.from('\r\nconnection: close')];

/** Where one of the spellings starts within the head (before `end`), or -1. */
function headerAt(buf: Buffer, end: number, names: readonly Buffer[]): number {
  for (const name of names) {
    const at = buf.indexOf(name);
    if (at !== -1 && at < end) return at + name.length;
  }
  return -1;
}

/** A header's decimal value, or undefined when the head has no such header. */
function headerNumber(buf: Buffer, end: number, names: readonly Buffer[]): number | undefined {
  let at = headerAt(buf, end, names);
  if (at === -1) return undefined;
  while (buf[at] === 32) at++;
  let n = 0;
  for (let c = buf[at] as number; c >= 48 && c <= 57; c = buf[++at] as number) n = n * 10 + c - 48;
  return n;
}

export class HttpChannel implements Channel {
  private socket: Socket | undefined;
  private buffer: Buffer = EMPTY;
  private pending: { resolve: (o: Outcome) => void; timer: NodeJS.Timeout } | undefined;

  constructor(
    private readonly target: HttpTarget,
    /** The next request's bytes (the same one, or one of a set in turn). */
    private readonly next: () => Buffer,
    /** A new connection for every request (the requests say `Connection: close`; not every server says it back). */
    private readonly connectionPerRequest = false,
    private readonly timeoutMs = 10_000,
    /** Hand back each answer's head and body (Content-Length framed), for callers that read them. */
    private readonly keepBody = false,
  ) {}

  send(): Promise<Outcome> {
    return new Promise((resolve) => {
      const socket = this.socket ?? this.open();
      const timer = setTimeout(() => this.fail('timeout'), this.timeoutMs);
      this.pending = { resolve, timer };
      socket.write(this.next());
    });
  }

  /** Closes the connection; a request still waiting for its answer ends as `closed`. */
  close(): void {
    this.socket?.destroy();
    this.socket = undefined;
    const pending = this.pending;
    if (pending === undefined) return;
    this.pending = undefined;
    clearTimeout(pending.timer);
    pending.resolve({ error: 'closed' });
  }

  private open(): Socket {
    const socket = connect({ host: this.target.host, port: this.target.port, noDelay: true });
    this.socket = socket;
    this.buffer = EMPTY;
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    // A socket already replaced (closed after a `Connection: close` answer) fails nothing: the
    // request in flight belongs to its successor.
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (this.socket === socket)
        this.fail(
          err.code === 'ECONNREFUSED'
            ? 'refused'
            : err.code === 'ECONNRESET' || err.code === 'EPIPE'
              ? 'reset'
              : (err.code ?? err.message),
        );
    });
    socket.on('close', () => {
      if (this.socket !== socket) return;
      this.socket = undefined;
      this.fail('closed');
    });
    return socket;
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const buf = this.buffer;
    const end = buf.indexOf(HEAD_END);
    if (end === -1 || this.pending === undefined) return;
    // Read from the bytes: decoding and matching the whole head per answer cost the generator
    // a tenth of its throughput against wrk.
    const status = (buf[9] as number) * 100 + (buf[10] as number) * 10 + (buf[11] as number) - 5328; // '0' = 48: 48*111
    const length = headerNumber(buf, end, CONTENT_LENGTH);
    let total: number;
    if (length !== undefined) {
      total = end + 4 + length;
      if (buf.length < total) return;
    } else if (headerAt(buf, end, TRANSFER_ENCODING) !== -1) {
      const at = buf.indexOf(CHUNKED_END, end + 4);
      if (at === -1) return;
      total = at + CHUNKED_END.length;
    } else {
      total = end + 4;
    }
    const body = this.keepBody && length !== undefined ? buf.subarray(end + 4, total) : undefined;
    const closing = this.connectionPerRequest || headerAt(buf, end, CONNECTION_CLOSE) !== -1;
    this.buffer = total === buf.length ? EMPTY : buf.subarray(total);
    const pending = this.pending;
    this.pending = undefined;
    clearTimeout(pending.timer);
    if (closing) this.close();
    pending.resolve(body === undefined ? { status } : { status, head: buf.subarray(0, end), body });
  }

  private fail(error: string): void {
    const pending = this.pending;
    if (pending === undefined) return;
    this.pending = undefined;
    clearTimeout(pending.timer);
    this.close();
    pending.resolve({ error });
  }
}

/** A request's bytes, built once. */
export function httpRequest(
  method: string,
  path: string,
  headers: Readonly<Record<string, string>>,
  body?: string,
): Buffer {
  const lines = [
    `${method} ${path} HTTP/1.1`,
    'Host: svc-agent',
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
  ];
  if (body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body ?? ''}`);
}
