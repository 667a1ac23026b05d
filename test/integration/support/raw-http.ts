// A minimal HTTP/1.1 client over raw sockets, for what fetch hides: exact bytes, header case,
// Connection: close, disconnecting while parked, and thousands of concurrent parked requests.
import { connect, type Socket } from 'node:net';

export interface RawResponse {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly rawHeaders: string[];
  readonly body: Buffer;
}

export function rawRequest(port: number, request: string | Buffer, timeoutMs = 10_000): Promise<RawResponse> {
  return new Promise((done, fail) => {
    const socket = connect(port, '127.0.0.1');
    const parser = new ResponseParser();
    let response: RawResponse | undefined;
    const timer = setTimeout(() => {
      socket.destroy();
      fail(new Error('raw request timed out'));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      response ??= parser.push(chunk);
      if (response) socket.end();
    });
    socket.on('close', () => {
      clearTimeout(timer);
      if (response) done(response);
      else fail(new Error('connection closed before a full response'));
    });
    socket.on('error', fail);
    socket.write(request);
  });
}

/** Sends one request and reports whether the server closes the connection after answering. */
export function serverClosesAfter(
  port: number,
  request: string,
  waitMs = 1000,
): Promise<{ response: RawResponse; closedByServer: boolean }> {
  return new Promise((done, fail) => {
    const socket = connect(port, '127.0.0.1');
    const parser = new ResponseParser();
    let response: RawResponse | undefined;
    let timer: NodeJS.Timeout | undefined;
    socket.on('data', (chunk: Buffer) => {
      response ??= parser.push(chunk);
      if (response && !timer) {
        timer = setTimeout(() => {
          socket.destroy();
          done({ response: response!, closedByServer: false });
        }, waitMs);
      }
    });
    socket.on('end', () => {
      clearTimeout(timer);
      if (response) done({ response, closedByServer: true });
      else fail(new Error('closed before a response'));
      socket.destroy();
    });
    socket.on('error', fail);
    socket.write(request);
  });
}

export class ResponseParser {
  private buffer = Buffer.alloc(0);

  /** Feeds bytes; returns the response once complete (Content-Length framing). */
  push(chunk: Buffer): RawResponse | undefined {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const end = this.buffer.indexOf('\r\n\r\n');
    if (end === -1) return undefined;
    const head = this.buffer.subarray(0, end).toString('latin1').split('\r\n');
    const status = Number(head[0]?.split(' ')[1]);
    const headers: Record<string, string> = {};
    const rawHeaders: string[] = [];
    for (const line of head.slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon);
      rawHeaders.push(name);
      headers[name.toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length'] ?? 0);
    if (this.buffer.length < end + 4 + length) return undefined;
    const body = this.buffer.subarray(end + 4, end + 4 + length);
    this.buffer = this.buffer.subarray(end + 4 + length);
    return { status, headers, rawHeaders, body };
  }
}

/** Opens a socket, sends a request, and hands back the socket with a promise of its response. */
export function openRequest(
  port: number,
  request: string,
): Promise<{ socket: Socket; response: Promise<RawResponse> }> {
  return new Promise((ready, fail) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(request);
      ready({ socket, response });
    });
    const parser = new ResponseParser();
    const response = new Promise<RawResponse>((done, failResponse) => {
      socket.on('data', (chunk: Buffer) => {
        const r = parser.push(chunk);
        if (r) done(r);
      });
      socket.on('close', () => failResponse(new Error('closed before a response')));
    });
    response.catch(() => undefined);
    socket.on('error', fail);
  });
}

export function get(path: string, headers: Record<string, string> = {}): string {
  return request('GET', path, undefined, headers);
}

export function request(method: string, path: string, body?: string, headers: Record<string, string> = {}): string {
  const lines = [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1'];
  for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
  if (body !== undefined) lines.push(`Content-Length: ${Buffer.byteLength(body)}`);
  return `${lines.join('\r\n')}\r\n\r\n${body ?? ''}`;
}
