// A few keep-alive connections shared by many callers, each sending its own request and reading
// the answer's body: the proxies scenario's authorize calls, which Node's fetch made too costly for
// the generator's one event loop at 1,000 proxies.
import { HttpChannel, type HttpTarget } from './http-channel.js';
import type { Outcome } from './types.js';

export class ChannelPool {
  private readonly free: number[] = [];
  private readonly channels: HttpChannel[];
  private readonly bytes: Buffer[];
  /** Callers waiting for a connection, first come first served. */
  private readonly waiting: ((slot: number) => void)[] = [];

  constructor(target: HttpTarget, size: number) {
    this.bytes = Array.from({ length: size }, () => Buffer.alloc(0));
    this.channels = Array.from(
      { length: size },
      (_, i) => new HttpChannel(target, () => this.bytes[i] as Buffer, false, 10_000, true),
    );
    for (let i = size - 1; i >= 0; i--) this.free.push(i);
  }

  async send(request: Buffer): Promise<Outcome> {
    const slot = this.free.pop() ?? (await new Promise<number>((resolve) => this.waiting.push(resolve)));
    this.bytes[slot] = request;
    try {
      return await (this.channels[slot] as HttpChannel).send();
    } finally {
      const next = this.waiting.shift();
      if (next !== undefined) next(slot);
      else this.free.push(slot);
    }
  }

  close(): void {
    for (const c of this.channels) c.close();
  }
}
