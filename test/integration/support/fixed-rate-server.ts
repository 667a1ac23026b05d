// A target with a known capacity for the load tool's tests: a node:http server on 127.0.0.1 that
// answers exactly `rate` calls per second, oldest first, and queues the rest (a token bucket). Its
// bucket holds 10 ms of the rate while idle, so a step never starts with a burst; while calls wait,
// a tick the busy test machine ran late may catch up a whole second of the rate, so the target
// keeps its rate even when its own process is starved of CPU. It counts what it answered.
import { createServer, type Server, type ServerResponse } from 'node:http';

/** The idle bucket and the catch-up allowed while calls wait, in ms of the rate. */
const IDLE_MS = 10;
const CATCH_UP_MS = 1000;

export class FixedRateServer {
  answered = 0;
  private readonly queue: ServerResponse[] = [];
  private readonly server: Server;
  private readonly timer: NodeJS.Timeout;
  private tokens = 0;
  private last = performance.now();

  constructor(readonly rate: number) {
    this.server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        this.queue.push(res);
        this.serve();
      });
    });
    this.server.keepAliveTimeout = 60_000;
    this.timer = setInterval(() => this.serve(), 1);
  }

  private serve(): void {
    const now = performance.now();
    const cap = ((this.queue.length > 0 ? CATCH_UP_MS : IDLE_MS) * this.rate) / 1000;
    this.tokens = Math.min(Math.max(cap, 1), this.tokens + ((now - this.last) * this.rate) / 1000);
    this.last = now;
    while (this.tokens >= 1 && this.queue.length > 0) {
      this.tokens--;
      this.answered++;
      this.queue.shift()!.end('ok');
    }
  }

  listen(): Promise<number> {
    return new Promise((done) =>
      this.server.listen(0, '127.0.0.1', () => done((this.server.address() as { port: number }).port)),
    );
  }

  close(): Promise<void> {
    clearInterval(this.timer);
    this.server.closeAllConnections();
    return new Promise((done) => this.server.close(() => done()));
  }
}
