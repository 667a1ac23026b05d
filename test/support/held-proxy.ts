// A loopback TCP proxy whose answers can be held: while held, what the target sends back is kept
// and what the client sends still goes through. A request then reaches etcd and is applied, and its
// answer does not come back: what a client sees when etcd hangs between applying a write and
// answering it (test/integration/write-outcome.test.ts). Released, the kept bytes go on in order.
import { connect, createServer, type Socket } from 'node:net';

export interface HeldProxy {
  /** `http://127.0.0.1:<port>`, to use in place of the target's URL. */
  readonly url: string;
  /** From now on, keeps every byte the target sends back. */
  hold(): void;
  /** Sends what was kept, and passes what comes from now on. */
  release(): void;
  close(): Promise<void>;
}

export async function startHeldProxy(targetUrl: string): Promise<HeldProxy> {
  const target = new URL(targetUrl);
  const sockets = new Set<Socket>();
  const kept: [Socket, Buffer][] = [];
  let held = false;
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
      s.on('error', () => s.destroy());
    }
    client.pipe(upstream);
    upstream.on('data', (chunk: Buffer) => {
      if (held) kept.push([client, chunk]);
      else client.write(chunk);
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    hold() {
      held = true;
    },
    release() {
      held = false;
      for (const [client, chunk] of kept.splice(0)) if (!client.destroyed) client.write(chunk);
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((done) => server.close(() => done()));
    },
  };
}
