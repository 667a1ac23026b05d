// The mesh scenario's connection against scripted servers on loopback: an echo is served (one
// connection per send, or one held for many), a connection ended before a byte came back is
// refused (closed or reset, as a sidecar refuses), and a listener that is not there, wrong bytes
// or an echo cut short are errors of their own.
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { EchoChannel, ECHOED, REFUSED } from '../../src/loadgen/echo-channel.js';

let server: Server | undefined;
afterEach(async () => {
  if (server === undefined) return;
  server.close();
  await once(server, 'close');
  server = undefined;
});

/** A server whose connections `onData` answers; resolves with its target and its accept count. */
async function serve(
  onData: (socket: Socket, chunk: Buffer) => void,
): Promise<{ target: { host: string; port: number }; accepted: () => number }> {
  let accepted = 0;
  server = createServer((socket) => {
    accepted++;
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => onData(socket, chunk));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { target: { host: '127.0.0.1', port: (server.address() as AddressInfo).port }, accepted: () => accepted };
}

const payload = Buffer.from('0123456789abcdef');

describe('EchoChannel', () => {
  it('serves an echo on a new connection per send', async () => {
    const { target, accepted } = await serve((socket, chunk) => socket.write(chunk));
    const channel = new EchoChannel(target, payload, false);
    for (let i = 0; i < 3; i++) expect(await channel.send()).toBe(ECHOED);
    expect(accepted()).toBe(3);
  });

  it('serves echoes split across reads on one held connection', async () => {
    const { target, accepted } = await serve((socket, chunk) => {
      socket.write(chunk.subarray(0, 5));
      setImmediate(() => socket.write(chunk.subarray(5)));
    });
    const channel = new EchoChannel(target, payload, true);
    for (let i = 0; i < 3; i++) expect(await channel.send()).toBe(ECHOED);
    expect(accepted()).toBe(1);
    channel.close();
  });

  it('counts a connection closed or reset before a byte came back as refused, and reconnects after', async () => {
    const closing = await serve((socket) => socket.end());
    expect(await new EchoChannel(closing.target, payload, false).send()).toBe(REFUSED);
    const held = new EchoChannel(closing.target, payload, true);
    expect(await held.send()).toBe(REFUSED);
    expect(await held.send()).toBe(REFUSED);
    expect(closing.accepted()).toBe(3);
    server!.close();
    // Unread bytes at close: the kernel resets the connection, as a sidecar's paused socket does.
    const resetting = await serve((socket) => socket.resetAndDestroy());
    expect(await new EchoChannel(resetting.target, payload, false).send()).toBe(REFUSED);
  });

  it('names a listener that is not there, wrong bytes and an echo cut short', async () => {
    const { target } = await serve((socket, chunk) =>
      chunk[0] === 0x30 ? socket.end(chunk.subarray(0, 4)) : socket.write(Buffer.from('x')),
    );
    expect(await new EchoChannel(target, payload, false).send()).toEqual({ error: 'closed' });
    expect(await new EchoChannel(target, Buffer.from('y'), false).send()).toEqual({ error: 'mismatch' });
    server!.close();
    await once(server!, 'close');
    server = undefined;
    expect(await new EchoChannel(target, payload, false).send()).toEqual({ error: 'connect-refused' });
  });
});
