// The load generator's connection against a scripted server: answers framed by Content-Length or
// chunked, header names in either case, answers split across reads and several in one, and a
// server that closes: each request gets its own status, and nothing is counted twice.
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ChannelPool } from '../../src/loadgen/channel-pool.js';
import { HttpChannel, httpRequest } from '../../src/loadgen/http-channel.js';

let server: Server | undefined;
afterEach(() => new Promise<void>((done) => (server ? server.close(() => done()) : done())));

/** A server that answers the n-th request on a connection with `answers[n]`, written in the given pieces. */
function scripted(answers: readonly (readonly string[])[], onConnection?: (s: Socket) => void): Promise<number> {
  return new Promise((ready) => {
    server = createServer((socket) => {
      onConnection?.(socket);
      let n = 0;
      const answer = async (chunk: Buffer): Promise<void> => {
        for (let i = chunk.indexOf('\r\n\r\n'); i !== -1; i = chunk.indexOf('\r\n\r\n', i + 4)) {
          const pieces = answers[n++ % answers.length] ?? [];
          for (const piece of pieces) {
            socket.write(piece);
            await new Promise((r) => setImmediate(r));
          }
        }
      };
      // One read's answers after the last one's: pieces of two answers never interleave on the wire.
      let written = Promise.resolve();
      socket.on('data', (chunk: Buffer) => {
        written = written.then(() => answer(chunk));
      });
    }).listen(0, '127.0.0.1', () => ready((server!.address() as { port: number }).port));
  });
}

const request = httpRequest('GET', '/x', {});

describe('HttpChannel', () => {
  it('reads Content-Length and chunked answers, in either header case, split across reads', async () => {
    const port = await scripted([
      ['HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhe', 'llo'],
      ['HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n'],
      ['HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n', '0\r\n\r\n'],
      ['HTTP/1.1 503 Service Unavailable\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n'],
    ]);
    const channel = new HttpChannel({ host: '127.0.0.1', port }, () => request);
    const statuses = [];
    for (let i = 0; i < 8; i++) statuses.push(await channel.send());
    channel.close();
    expect(statuses).toEqual([200, 404, 201, 503, 200, 404, 201, 503].map((status) => ({ status })));
  });

  it('opens a new connection after an answer that says Connection: close, or every time when asked', async () => {
    let connections = 0;
    const port = await scripted(
      [['HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n']],
      () => connections++,
    );
    const closing = new HttpChannel({ host: '127.0.0.1', port }, () => request);
    for (let i = 0; i < 3; i++) expect(await closing.send()).toEqual({ status: 200 });
    closing.close();
    expect(connections).toBe(3);
  });

  it('reports a server that closes mid-answer, and one that is not there', async () => {
    const port = await scripted([['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort']], (socket) =>
      socket.on('data', () => setTimeout(() => socket.destroy(), 20)),
    );
    const channel = new HttpChannel({ host: '127.0.0.1', port }, () => request);
    expect(await channel.send()).toEqual({ error: 'closed' });
    channel.close();
    await new Promise<void>((done) => server!.close(() => done()));
    server = undefined;
    const gone = new HttpChannel({ host: '127.0.0.1', port }, () => request);
    expect(await gone.send()).toEqual({ error: 'refused' });
  });

  it('says whether each body holds the marked bytes, never reading an earlier answer left in the read buffer', async () => {
    const answer = (status: string, body: string): string[] => [
      `HTTP/1.1 ${status}\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    ];
    // The allow's mark sits past the end of the shorter deny that follows it on the same connection.
    const port = await scripted([
      answer('200 OK', '{"Reason":"a longer reason","Authorized":true}'),
      answer('200 OK', '{"Authorized":false}'),
      answer('403 Forbidden', ''),
    ]);
    const mark = Buffer.from('"Authorized":true');
    const channel = new HttpChannel({ host: '127.0.0.1', port }, () => request, false, 10_000, false, mark);
    const outcomes = [];
    for (let i = 0; i < 6; i++) outcomes.push(await channel.send());
    channel.close();
    expect(outcomes).toEqual(
      [true, false, false, true, false, false].map((marked, i) => ({ status: i % 3 === 2 ? 403 : 200, marked })),
    );
  });

  it('ends a request unanswered past its timeout as timeout, and the next one goes out on a new connection', async () => {
    let connections = 0;
    // The first connection never answers; later ones do.
    await new Promise<void>((ready) => {
      server = createServer((socket) => {
        const silent = connections++ === 0;
        socket.on('data', () => silent || socket.write('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
      }).listen(0, '127.0.0.1', () => ready());
    });
    const port = (server!.address() as { port: number }).port;
    const channel = new HttpChannel({ host: '127.0.0.1', port }, () => request, false, 300);
    expect(await channel.send()).toEqual({ error: 'timeout' });
    expect(await channel.send()).toEqual({ status: 200 });
    channel.close();
    expect(connections).toBe(2);
  });
});

describe('HttpChannel.close', () => {
  it('ends a request still waiting for its answer (a blocking read at the end of a run) as closed', async () => {
    const port = await scripted([[]]); // never answers
    const channel = new HttpChannel({ host: '127.0.0.1', port }, () => request, false, 60_000);
    const waiting = channel.send();
    channel.close();
    expect(await waiting).toEqual({ error: 'closed' });
  });
});

describe('ChannelPool', () => {
  it('shares a few connections among many callers, each getting its own answer body', async () => {
    let connections = 0;
    // Echoes the request path back as the body, so each caller can tell its answer.
    await new Promise<void>((ready) => {
      server = createServer((socket) => {
        connections++;
        socket.on('data', (chunk: Buffer) => {
          for (const m of chunk.toString().matchAll(/GET (\S+) HTTP/g))
            socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${m[1]!.length}\r\n\r\n${m[1]}`);
        });
      }).listen(0, '127.0.0.1', () => ready());
    });
    const port = (server!.address() as { port: number }).port;
    const pool = new ChannelPool({ host: '127.0.0.1', port }, 2);
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => pool.send(httpRequest('GET', `/call-${i}`, {}))),
    );
    pool.close();
    expect(answers.map((a) => ('body' in a ? a.body?.toString() : a))).toEqual(
      Array.from({ length: 20 }, (_, i) => `/call-${i}`),
    );
    expect(connections).toBe(2);
  });
});
