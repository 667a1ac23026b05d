// One keep-alive HTTP/1.1 connection that sends prepared requests one at a time and reads just
// enough of each answer (status, Content-Length or chunked end) to know it is complete: the load
// generator's own cost per request stays small next to the agent's.
import { connect, type Socket } from 'node:net';
import type { Outcome } from './recorder.js';
import type { Channel } from './scheduler.js';

export interface HttpTarget {
  readonly host: string;
  readonly port: number;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const CHUNKED_END = Buffer.from('0\r\n\r\n');

export class HttpChannel implements Channel {
  private socket: Socket | undefined;
  private buffer: Buffer = Buffer.alloc(0);
  private pending: { resolve: (o: Outcome) => void; timer: NodeJS.Timeout } | undefined;

  constructor(
    private readonly target: HttpTarget,
    /** The next request's bytes (the same one, or one of a set in turn). */
    private readonly next: () => Buffer,
    private readonly timeoutMs = 10_000,
  ) {}

  send(): Promise<Outcome> {
    return new Promise((resolve) => {
      const socket = this.socket ?? this.open();
      const timer = setTimeout(() => this.fail('timeout'), this.timeoutMs);
      this.pending = { resolve, timer };
      socket.write(this.next());
    });
  }

  close(): void {
    this.socket?.destroy();
    this.socket = undefined;
  }

  private open(): Socket {
    const socket = connect({ host: this.target.host, port: this.target.port, noDelay: true });
    this.socket = socket;
    this.buffer = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => this.fail(err.code === 'ECONNREFUSED' ? 'refused' : err.code === 'ECONNRESET' || err.code === 'EPIPE' ? 'reset' : (err.code ?? err.message)));
    socket.on('close', () => {
      if (this.socket === socket) this.socket = undefined;
      this.fail('closed');
    });
    return socket;
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const end = this.buffer.indexOf(HEAD_END);
    if (end === -1 || this.pending === undefined) return;
    const head = this.buffer.subarray(0, end).toString('latin1');
    const status = Number(head.slice(9, 12));
    const length = /\r\ncontent-length: *(\d+)/i.exec(head);
    let total: number;
    if (length !== null) {
      total = end + 4 + Number(length[1]);
      if (this.buffer.length < total) return;
    } else if (/\r\ntransfer-encoding: *chunked/i.test(head)) {
      const at = this.buffer.indexOf(CHUNKED_END, end + 4);
      if (at === -1) return;
      total = at + CHUNKED_END.length;
    } else {
      total = end + 4;
    }
    this.buffer = this.buffer.subarray(total);
    const pending = this.pending;
    this.pending = undefined;
    clearTimeout(pending.timer);
    if (/\r\nconnection: *close/i.test(head)) this.close();
    pending.resolve({ status });
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
export function httpRequest(method: string, path: string, headers: Readonly<Record<string, string>>, body?: string): Buffer {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: svc-agent', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  if (body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body ?? ''}`);
}
