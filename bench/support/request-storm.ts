// The leaf benches' request storms: waves of requests sent at once over keep-alive connections,
// one per request, as many proxies asking their local agent at the same moment.
import { connect, type Socket } from 'node:net';
import { ResponseParser } from './http-response.js';
import { LOOPBACK } from './ports.js';

/**
 * Waves of `size` requests sent at once, until stopped (or `maxWaves`): one keep-alive connection
 * per request, as proxies hold to their local agent, over raw sockets with a pre-built request so
 * the client's own CPU on the shared cores stays small. `target(wave, i)` is request i's path; a
 * wave can take seconds while wrk saturates the agent (the signing worker runs at a lower
 * priority), so a connection the server closed as idle is replaced before the next wave.
 */
export function requestStorm(
  port: number,
  size: number,
  target: (wave: number, i: number) => string,
  maxWaves = Number.POSITIVE_INFINITY,
): () => { stop(): Promise<string> } {
  return () => {
    let running = true;
    let answered = 0;
    let failed = 0;
    let wave = 0;
    let slowestWaveMs = 0;
    const sockets: (Socket | undefined)[] = new Array<Socket | undefined>(size).fill(undefined);
    const open = (i: number): Promise<Socket> =>
      new Promise((resolve) => {
        const socket = connect(port, LOOPBACK, () => resolve(socket));
        socket.on('error', () => socket.destroy());
        socket.on('close', () => {
          if (sockets[i] === socket) sockets[i] = undefined;
        });
        sockets[i] = socket;
      });
    const one = async (i: number, path: string): Promise<void> => {
      const existing = sockets[i];
      const socket = existing !== undefined && !existing.destroyed ? existing : await open(i);
      await new Promise<void>((resolve) => {
        const parser = new ResponseParser();
        const done = (ok: boolean): void => {
          socket.off('data', onData);
          socket.off('close', onClose);
          if (ok) answered++;
          else failed++;
          resolve();
        };
        const onData = (chunk: Buffer): void => {
          const response = parser.feed(chunk);
          if (response !== undefined) done(response.status < 500 && response.status !== 429);
        };
        const onClose = (): void => done(false);
        socket.on('data', onData);
        socket.once('close', onClose);
        socket.write(`GET ${path} HTTP/1.1\r\nHost: ${LOOPBACK}\r\n\r\n`);
      });
    };
    const loop = (async () => {
      while (running && wave < maxWaves) {
        const w = wave++;
        const started = performance.now();
        await Promise.all(Array.from({ length: size }, (_, i) => one(i, target(w, i))));
        slowestWaveMs = Math.max(slowestWaveMs, performance.now() - started);
      }
    })();
    return {
      async stop() {
        running = false;
        await loop;
        for (const socket of sockets) socket?.destroy();
        return `${answered} answered in ${wave} waves of ${size} (slowest wave ${(slowestWaveMs / 1000).toFixed(2)} s)${failed > 0 ? `, ${failed} failed` : ''}`;
      },
    };
  };
}

/** Services are numbered across storms, so every wave of first leaves asks for never-seen ones. */
let serviceSeq = 0;

/** Waves of `size` never-seen services asking for their first leaf; `names` collects them in order. */
export function firstLeafStorm(
  port: number,
  size: number,
  maxWaves?: number,
  names?: string[],
): () => { stop(): Promise<string> } {
  return requestStorm(
    port,
    size,
    () => {
      const name = `storm-${serviceSeq++}`;
      names?.push(name);
      return `/v1/agent/connect/ca/leaf/${name}`;
    },
    maxWaves,
  );
}
