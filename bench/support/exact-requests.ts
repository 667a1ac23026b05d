// Sends exactly `count` requests over a few kept-alive connections, one in flight per connection,
// and checks every answer: the client for instruction counts (bench/probes/authorize-instructions.ts),
// where a server's work must be a known number of requests rather than what fits in a time.
// Requests are formatted as wrk formats them (Host, Content-Type, Content-Length), once each.
import { connect, type Socket } from 'node:net';
import { ResponseParser } from './http-response.js';
import { LOOPBACK } from './ports.js';

export interface ExactRequests {
  readonly port: number;
  readonly method: 'GET' | 'PUT' | 'POST';
  readonly path: string;
  /** One body per request, in turn; empty for a GET. */
  readonly bodies: readonly string[];
  readonly count: number;
  readonly connections: number;
}

/** Formats each distinct request once. */
function formatted(r: ExactRequests): Buffer[] {
  const host = `${LOOPBACK}:${r.port}`;
  const bodies = r.bodies.length === 0 ? [undefined] : r.bodies;
  return bodies.map((body) => {
    const head = `${r.method} ${r.path} HTTP/1.1\r\nHost: ${host}\r\n`;
    if (body === undefined) return Buffer.from(`${head}\r\n`, 'latin1');
    const framing = `Content-Type: application/octet-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
    return Buffer.from(`${head}${framing}${body}`, 'latin1');
  });
}

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: LOOPBACK, port, noDelay: true });
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Sends the requests; resolves with the count answered per status once all are answered. */
export async function sendExactly(r: ExactRequests): Promise<Map<number, number>> {
  const requests = formatted(r);
  const statuses = new Map<number, number>();
  let next = 0;
  const lane = async (): Promise<void> => {
    const socket = await open(r.port);
    try {
      for (let i = next++; i < r.count; i = next++) {
        const parser = new ResponseParser();
        const answered = new Promise<number>((resolve, reject) => {
          const onData = (chunk: Buffer): void => {
            const response = parser.feed(chunk);
            if (response === undefined) return;
            socket.off('data', onData).off('error', reject).off('close', onClose);
            resolve(response.status);
          };
          const onClose = (): void => reject(new Error(`connection closed before answer ${i + 1}`));
          socket.on('data', onData).once('error', reject).once('close', onClose);
        });
        socket.write(requests[i % requests.length] as Buffer);
        const status = await answered;
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    } finally {
      socket.destroy();
    }
  };
  await Promise.all(Array.from({ length: Math.min(r.connections, r.count) }, lane));
  return statuses;
}
