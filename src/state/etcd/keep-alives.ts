// Lease renewals on one long-lived keep-alive stream per connection, instead of a stream opened and
// closed per renewal (its set-up cost as much agent CPU as the renewal: bench/sizing/locks.ts).
// etcd answers each request on the stream with the lease's ID and remaining TTL, in order, so a
// renewal is matched to the first one waiting for that ID. A stream that errs, ends or leaves a
// renewal unanswered past its deadline is dropped with everything waiting on it (the caller's
// retry opens a new one, on a member that answers), so an answer is never handed to the wrong call.

/** The stream as etcd's client gives it (grpc-js's duplex stream of LeaseKeepAlive). */
export interface KeepAliveStream {
  write(request: { readonly ID: string }): void;
  on(
    event: 'data',
    listener: (response: { readonly ID: string | number; readonly TTL: string | number }) => void,
  ): void;
  on(event: 'error', listener: (err: Error) => void): void;
  on(event: 'end', listener: () => void): void;
  end(): void;
}

export interface KeepAliveOptions {
  /** Opens a stream (no deadline: it lives as long as it works). */
  readonly open: () => Promise<KeepAliveStream>;
  /** The error a renewal fails with when its stream is gone: etcd's client's retryable kinds. */
  readonly streamLost: (why: string, cause?: Error) => Error;
  readonly deadlineExceeded: () => Error;
}

interface Waiting {
  readonly id: string;
  readonly resolve: (ttl: number) => void;
  readonly reject: (err: Error) => void;
  readonly timer: NodeJS.Timeout;
}

export class KeepAlives {
  private stream: Promise<KeepAliveStream> | undefined;
  private waiting: Waiting[] = [];
  private closed = false;

  constructor(private readonly options: KeepAliveOptions) {}

  /** Renews lease `id`: its remaining TTL in seconds (0 when etcd no longer has it). */
  async renew(id: string, deadline: number): Promise<number> {
    if (this.closed) throw this.options.streamLost('the connection is closed');
    const opened = this.current();
    const stream = await opened;
    // Dropped while it opened: its renewals have failed already; this one fails too (the caller retries).
    if (this.stream !== opened) throw this.options.streamLost('the lease keep-alive stream ended');
    return new Promise<number>((resolve, reject) => {
      const timer = setTimeout(
        () => this.drop(opened, this.options.deadlineExceeded()),
        Math.max(0, deadline - Date.now()),
      );
      this.waiting.push({ id, resolve, reject, timer });
      stream.write({ ID: id });
    });
  }

  close(): void {
    this.closed = true;
    if (this.stream !== undefined) this.drop(this.stream, this.options.streamLost('the connection is closed'));
  }

  private current(): Promise<KeepAliveStream> {
    if (this.stream !== undefined) return this.stream;
    const opened = this.options.open().then((stream) => {
      stream.on('data', (response) => {
        if (this.stream === opened) this.answer(String(response.ID), Number(response.TTL));
      });
      stream.on('error', (err) =>
        this.drop(opened, this.options.streamLost('the lease keep-alive stream failed', err)),
      );
      stream.on('end', () => this.drop(opened, this.options.streamLost('the lease keep-alive stream ended')));
      return stream;
    });
    // A stream that could not be opened is not kept: the next renewal tries again.
    opened.catch(() => {
      if (this.stream === opened) this.stream = undefined;
    });
    this.stream = opened;
    return opened;
  }

  private answer(id: string, ttl: number): void {
    const at = this.waiting.findIndex((w) => w.id === id);
    if (at < 0) return;
    const [waiting] = this.waiting.splice(at, 1);
    if (waiting === undefined) return;
    clearTimeout(waiting.timer);
    waiting.resolve(ttl);
  }

  /** Drops `opened` if it is still the current stream, failing every renewal waiting on it. */
  private drop(opened: Promise<KeepAliveStream>, err: Error): void {
    if (this.stream !== opened) return;
    this.stream = undefined;
    const waiting = this.waiting;
    this.waiting = [];
    for (const w of waiting) {
      clearTimeout(w.timer);
      w.reject(err);
    }
    void opened.then(
      (stream) => stream.end(),
      () => undefined,
    );
  }
}
