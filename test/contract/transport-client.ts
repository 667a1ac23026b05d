// A raw HTTP/1.1 client for the transport contract: one socket, exact bytes out, responses read
// in order as they arrive (Content-Length framing, HEAD answers without their body), and the
// server's close seen as an event.
import { connect, type Socket } from 'node:net';

export interface WireResponse {
  readonly status: number;
  /** Lower-case names; a repeated header keeps its last value. */
  readonly headers: Record<string, string>;
  /** Header names as sent, in order. */
  readonly names: string[];
  readonly body: string;
}

export class RawClient {
  private buffer = Buffer.alloc(0);
  private readonly responses: WireResponse[] = [];
  private waiting: { resolve: (r: WireResponse) => void; reject: (err: Error) => void } | undefined;
  /** Requests sent with HEAD, oldest first: their answers carry no body. */
  private readonly heads: boolean[] = [];
  /** Resolves when the server closes the connection (or it is reset). */
  readonly closed: Promise<void>;
  private isClosed = false;

  private constructor(private readonly socket: Socket) {
    this.closed = new Promise((resolve) => {
      socket.on('close', () => {
        this.isClosed = true;
        this.waiting?.reject(new Error('connection closed before a response'));
        this.waiting = undefined;
        resolve();
      });
    });
    socket.on('error', () => {}); // a reset shows as 'close'
    socket.on('data', (chunk: Buffer) => this.read(chunk));
  }

  static open(port: number): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(new RawClient(socket)));
      socket.once('error', reject);
    });
  }

  send(raw: string | Buffer, { head = false } = {}): void {
    this.heads.push(head);
    this.socket.write(raw);
  }

  /** The next response on the connection. */
  next(): Promise<WireResponse> {
    const ready = this.responses.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    if (this.isClosed) return Promise.reject(new Error('connection closed before a response'));
    return new Promise((resolve, reject) => (this.waiting = { resolve, reject }));
  }

  /** Sends a request and reads its answer. */
  async exchange(raw: string | Buffer, options: { head?: boolean } = {}): Promise<WireResponse> {
    this.send(raw, options);
    return this.next();
  }

  /** Every response still unread once the server has closed. */
  async rest(): Promise<WireResponse[]> {
    await this.closed;
    return this.responses.splice(0);
  }

  destroy(): void {
    this.socket.destroy();
  }

  private read(chunk: Buffer): void {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end === -1) return;
      const lines = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      const names: string[] = [];
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        names.push(line.slice(0, colon));
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = this.heads[0] === true ? 0 : Number(headers['content-length'] ?? 0);
      if (this.buffer.length < end + 4 + length) return;
      this.heads.shift();
      const body = this.buffer.subarray(end + 4, end + 4 + length).toString();
      this.buffer = this.buffer.subarray(end + 4 + length);
      const response = { status: Number(lines[0]?.split(' ')[1]), headers, names, body };
      const waiting = this.waiting;
      this.waiting = undefined;
      if (waiting !== undefined) waiting.resolve(response);
      else this.responses.push(response);
    }
  }
}

/** An HTTP/1.1 request with a Host header; a body gets its Content-Length. */
export function request(method: string, path: string, body?: string, headers: Record<string, string> = {}): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`;
}
