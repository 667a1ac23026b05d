// Loopback ports for child servers: the agent does not report a port-0 bind back, so the bench
// picks a free port first and then waits for the child to accept on it.
import { connect, createServer } from 'node:net';

/** The only address any bench talks to. */
export const LOOPBACK = '127.0.0.1';

/** Binds 127.0.0.1:0, reads the port the kernel chose, and releases it for a child to take. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, LOOPBACK, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no port from listen(0)'))));
    });
  });
}

function tryConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: LOOPBACK, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * Resolves once `port` accepts a TCP connection. `gaveUp` is polled between tries so a child that
 * died during start-up fails the wait at once instead of after the whole timeout.
 */
export async function waitForPort(port: number, timeoutMs: number, gaveUp: () => string | undefined): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reason = gaveUp();
    if (reason !== undefined) throw new Error(reason);
    if (await tryConnect(port)) return;
    if (Date.now() > deadline) throw new Error(`nothing accepted on ${LOOPBACK}:${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
