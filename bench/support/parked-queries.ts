// Opens many raw keep-alive sockets to one server, sends one request on each (a blocking query
// that parks), and records when and how each is answered. Raw `net` sockets and typed arrays keep
// the client's own cost per query small, so 15k of them fit beside the server on 2 cores.
import { connect, type Socket } from 'node:net';
import { ResponseParser, type ParsedResponse } from './http-response.js';
import { LOOPBACK } from './ports.js';

export interface ParkOptions {
  port: number;
  /** Path and query, e.g. /v1/kv/k?index=5&wait=5m. */
  path: string;
  count: number;
  /**
   * Connects in flight at once. Far below the listen backlog (uWS asks for 512, capped by
   * somaxconn), so no SYN is dropped and retried a second later, which would skew the park time.
   */
  concurrency?: number;
}

export interface Answer {
  index: number;
  at: number;
  response: ParsedResponse;
}

/** A set of parked requests; `onAnswer` sees each response as soon as its last byte arrives. */
export class ParkedQueries {
  readonly sockets: Socket[] = [];
  /** Sockets whose connect failed (EMFILE, refused, ...): they never parked. */
  connectFailed = 0;
  readonly connectErrors: string[] = [];
  /** performance.now() of each parked socket's complete response (by park order); NaN while unanswered. */
  readonly answeredAt: Float64Array;
  readonly status: Uint16Array;
  answered = 0;
  /** Sockets that failed or closed without a complete response. */
  failed = 0;
  readonly failures: string[] = [];
  onAnswer: ((answer: Answer) => void) | undefined;
  private settledWaiters: (() => void)[] = [];

  constructor(readonly count: number) {
    this.answeredAt = new Float64Array(count).fill(Number.NaN);
    this.status = new Uint16Array(count);
  }

  /** Resolves once every socket is answered or failed, or after `timeoutMs`. */
  allSettled(timeoutMs: number): Promise<boolean> {
    if (this.answered + this.failed >= this.parked) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.settledWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Sockets connected with their request written. */
  get parked(): number {
    return this.sockets.length;
  }

  closeAll(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  /** @internal called by parkQueries for each socket event. */
  settle(i: number, response: ParsedResponse | undefined, failure?: string): void {
    if (response !== undefined) {
      this.answeredAt[i] = performance.now();
      this.status[i] = response.status;
      this.answered++;
      this.onAnswer?.({ index: i, at: this.answeredAt[i] ?? Number.NaN, response });
    } else {
      this.failed++;
      // Keep a few reasons for the report; 15k copies of one message say nothing more.
      if (this.failures.length < 5 && failure !== undefined) this.failures.push(failure);
    }
    if (this.answered + this.failed >= this.parked) {
      for (const wake of this.settledWaiters.splice(0)) wake();
    }
  }
}

function openOne(queries: ParkedQueries, port: number, request: Buffer): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect({ host: LOOPBACK, port, noDelay: true });
    let slot = -1; // index in queries.sockets once connected
    let parser: ResponseParser | undefined; // created on first byte: 15k idle parsers are waste
    let done = false;
    const finish = (response: ParsedResponse | undefined, failure?: string): void => {
      if (done || slot < 0) return;
      done = true;
      queries.settle(slot, response, failure);
    };
    socket.once('error', (err) => {
      if (slot >= 0) return finish(undefined, err.message);
      // Never connected: count it and move on, so one EMFILE does not hide how many did park.
      queries.connectFailed++;
      if (queries.connectErrors.length < 5) queries.connectErrors.push(err.message);
      resolve();
    });
    socket.once('connect', () => {
      slot = queries.sockets.push(socket) - 1;
      socket.write(request, () => resolve());
    });
    socket.on('data', (chunk: Buffer) => {
      if (done) return;
      try {
        parser ??= new ResponseParser();
        const response = parser.feed(chunk);
        if (response !== undefined) finish(response);
      } catch (err) {
        finish(undefined, err instanceof Error ? err.message : String(err));
      }
    });
    socket.once('close', () => finish(parser?.finish(), 'closed before a complete response'));
  });
}

/** Connects `count` sockets and sends the request on each; resolves when all are written. */
export async function parkQueries(options: ParkOptions): Promise<ParkedQueries> {
  const queries = new ParkedQueries(options.count);
  const request = Buffer.from(`GET ${options.path} HTTP/1.1\r\nHost: ${LOOPBACK}:${options.port}\r\n\r\n`, 'latin1');
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next++ < options.count) await openOne(queries, options.port, request);
  };
  const lanes = Math.min(options.concurrency ?? 256, options.count);
  await Promise.all(Array.from({ length: lanes }, worker));
  return queries;
}
