// One keep-alive HTTP/1.1 connection that sends prepared requests one at a time and reads just
// enough of each answer (status, Content-Length or chunked end) to know it is complete: the load
// generator's own cost per request stays small next to the agent's (bench/probes/loadgen-ceiling.ts).
import { connect, type Socket } from 'node:net';
import type { Outcome } from './types.js';
import type { Channel } from './scheduler.js';

export interface HttpTarget {
  readonly host: string;
  readonly port: number;
}

const CHUNKED_END = Buffer.from('0\r\n\r\n');
const EMPTY = Buffer.alloc(0);
// Header names lower-cased; a byte OR 0x20 lower-cases a letter and leaves '-' and ':' as they are.
const CONTENT_LENGTH = Buffer.from('content-length:');
const TRANSFER_ENCODING = Buffer.from('transfer-encoding:');
const CONNECTION = Buffer.from('connection:');
const CHUNKED = Buffer.from('chunked');
const CLOSE = Buffer.from('close');

/**
 * Every read of every connection lands in this one buffer (net's `onread`): no Buffer and no stream
 * event per answer. An answer is read before the callback returns; a partial one is copied out.
 */
const READ_BUFFER = Buffer.allocUnsafe(64 * 1024);

/** Whether `name` (lower case) is at `at`, in any case. */
function nameAt(buf: Buffer, at: number, name: Buffer): boolean {
  for (let k = 0; k < name.length; k++) if (((buf[at + k] as number) | 0x20) !== name[k]) return false;
  return true;
}

/** Where a header's value starts (spaces skipped). */
function valueAt(buf: Buffer, at: number): number {
  while (buf[at] === 32) at++;
  return at;
}

/**
 * Where `needle` first starts within `buf[from, to)`, or -1. Buffer.indexOf would read on to the
 * end of the shared read buffer, 64 KiB of earlier reads, whenever the needle is not in the answer.
 */
function indexWithin(buf: Buffer, from: number, to: number, needle: Buffer): number {
  const first = needle[0];
  for (let at = from, last = to - needle.length; at <= last; at++) {
    if (buf[at] !== first) continue;
    let k = 1;
    while (k < needle.length && buf[at + k] === needle[k]) k++;
    if (k === needle.length) return at;
  }
  return -1;
}

/** Immutable outcomes, one per status (and mark), shared by every answer: nothing allocated per answer. */
const plain = new Map<number, Outcome>();
const marked = new Map<number, Outcome>();
const unmarked = new Map<number, Outcome>();
function outcomeOf(status: number, mark: boolean | undefined): Outcome {
  const cache = mark === undefined ? plain : mark ? marked : unmarked;
  let outcome = cache.get(status);
  if (outcome === undefined) {
    outcome = Object.freeze(mark === undefined ? { status } : { status, marked: mark });
    cache.set(status, outcome);
  }
  return outcome;
}

/** Timeouts are checked by one timer for every connection, not one timer per request. */
const SWEEP_MS = 250;
const live = new Set<HttpChannel>();
let sweeper: NodeJS.Timeout | undefined;
function watch(channel: HttpChannel): void {
  live.add(channel);
  // Unref'd: a connection with a request out keeps the process alive, the sweeper alone does not.
  sweeper ??= setInterval(() => {
    for (const c of live) c.sweep(SWEEP_MS);
  }, SWEEP_MS).unref();
}
function unwatch(channel: HttpChannel): void {
  live.delete(channel);
  if (live.size > 0 || sweeper === undefined) return;
  clearInterval(sweeper);
  sweeper = undefined;
}

export class HttpChannel implements Channel {
  private socket: Socket | undefined;
  /** A partial answer, copied out of the read buffer. */
  private buffer: Buffer = EMPTY;
  private done: ((outcome: Outcome) => void) | undefined;
  /** How long the request in flight has waited, counted by the sweeper. */
  private waitedMs = 0;

  constructor(
    private readonly target: HttpTarget,
    /** The next request's bytes (the same one, or one of a set in turn). */
    private readonly next: () => Buffer,
    /** A new connection for every request (the requests say `Connection: close`; not every server says it back). */
    private readonly connectionPerRequest = false,
    private readonly timeoutMs = 10_000,
    /** Hand back each answer's head and body (Content-Length framed), for callers that read them. */
    private readonly keepBody = false,
    /** Bytes looked for in each answer's body: the outcome says whether they were there (`marked`). */
    private readonly mark?: Buffer,
  ) {}

  send(): Promise<Outcome> {
    return new Promise((resolve) => this.start(resolve));
  }

  /** Sends the next request; `done` gets its outcome. The scheduler's way: no promise per request. */
  start(done: (outcome: Outcome) => void): void {
    const socket = this.socket ?? this.open();
    this.done = done;
    this.waitedMs = 0;
    socket.write(this.next());
  }

  /** Closes the connection; a request still waiting for its answer ends as `closed`. */
  close(): void {
    this.socket?.destroy();
    this.socket = undefined;
    this.buffer = EMPTY;
    unwatch(this);
    const done = this.done;
    if (done === undefined) return;
    this.done = undefined;
    done({ error: 'closed' });
  }

  /** The sweeper's call: `ms` more waited; a request past its timeout fails. */
  sweep(ms: number): void {
    if (this.done !== undefined && (this.waitedMs += ms) >= this.timeoutMs) this.fail('timeout');
  }

  private open(): Socket {
    const socket = connect({
      host: this.target.host,
      port: this.target.port,
      noDelay: true,
      onread: { buffer: READ_BUFFER, callback: (n: number, buf: Uint8Array) => this.onRead(buf as Buffer, n) },
    });
    this.socket = socket;
    this.buffer = EMPTY;
    watch(this);
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

  private onRead(read: Buffer, n: number): boolean {
    let buf = read;
    let len = n;
    if (this.buffer.length > 0) {
      buf = Buffer.concat([this.buffer, read.subarray(0, n)]);
      len = buf.length;
      this.buffer = EMPTY;
    }
    if (!this.parse(buf, len)) this.buffer = buf === read ? Buffer.from(read.subarray(0, n)) : buf;
    return true;
  }

  /**
   * Reads the answer in `buf[0, len)` if it is complete and hands over its outcome; false while it
   * is not. One pass over the head finds its end and the framing headers: no string, no search past it.
   */
  private parse(buf: Buffer, len: number): boolean {
    const done = this.done;
    if (done === undefined || len < 12) return false;
    const status = (buf[9] as number) * 100 + (buf[10] as number) * 10 + (buf[11] as number) - 5328; // '0' = 48: 48*111
    let length = -1;
    let chunked = false;
    let closing = this.connectionPerRequest;
    let at = 12;
    let headEnd = -1;
    // Each pass starts a line: an empty one ends the head.
    while (at < len) {
      while (at < len && buf[at] !== 10) at++;
      at++;
      if (at + 1 >= len) return false;
      const c = (buf[at] as number) | 0x20;
      if (buf[at] === 13) {
        headEnd = at + 2;
        break;
      }
      if (c === 99 /* c */) {
        if (nameAt(buf, at, CONTENT_LENGTH)) {
          let v = valueAt(buf, at + CONTENT_LENGTH.length);
          length = 0;
          for (let d = buf[v] as number; d >= 48 && d <= 57; d = buf[++v] as number) length = length * 10 + d - 48;
        } else if (nameAt(buf, at, CONNECTION) && nameAt(buf, valueAt(buf, at + CONNECTION.length), CLOSE)) {
          closing = true;
        }
      } else if (c === 116 /* t */ && nameAt(buf, at, TRANSFER_ENCODING)) {
        chunked = nameAt(buf, valueAt(buf, at + TRANSFER_ENCODING.length), CHUNKED);
      }
    }
    if (headEnd === -1 || headEnd > len) return false;
    let total: number;
    if (length !== -1) {
      total = headEnd + length;
      if (len < total) return false;
    } else if (chunked) {
      const end = indexWithin(buf, headEnd, len, CHUNKED_END);
      if (end === -1) return false;
      total = end + CHUNKED_END.length;
    } else {
      total = headEnd;
    }
    let outcome: Outcome;
    if (this.keepBody && length !== -1) {
      const answer = Buffer.from(buf.subarray(0, total));
      outcome = { status, head: answer.subarray(0, headEnd - 4), body: answer.subarray(headEnd) };
    } else if (this.mark !== undefined) {
      outcome = outcomeOf(status, indexWithin(buf, headEnd, total, this.mark) !== -1);
    } else {
      outcome = outcomeOf(status, undefined);
    }
    // What follows the answer (a server answering what was not asked) is kept, as a read would.
    if (total < len) this.buffer = Buffer.from(buf.subarray(total, len));
    this.done = undefined;
    if (closing) this.close();
    done(outcome);
    return true;
  }

  private fail(error: string): void {
    const done = this.done;
    if (done === undefined) return;
    this.done = undefined;
    this.close();
    done({ error });
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
