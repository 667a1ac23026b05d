// The cluster's mailbox (src/core/mailbox.ts) in memory, for a client
// agent's HTTP API paired with a server's in one process: a request goes to the one server serving,
// as the JSON etcd would carry, and its answer comes back the same way; a request no server answers
// within its deadline (on the injected clock) resolves undefined, as etcd's mailbox does.
import type { Mailbox } from '../../src/core/mailbox.js';
import type { Clock } from '../../src/core/clock.js';

export class MemoryMailbox implements Mailbox {
  private handler: ((body: unknown) => Promise<unknown>) | undefined;

  constructor(private readonly clock: Clock) {}

  request(body: unknown, deadlineMs: number): Promise<unknown> {
    return new Promise((resolve) => {
      const timer = this.clock.setTimer(deadlineMs, () => resolve(undefined));
      // A server whose handler fails writes no answer: the asker waits out its deadline (state/etcd/etcd-mailbox.ts).
      this.handler?.(asJson(body)).then(
        (answer) => {
          timer.cancel();
          resolve(asJson(answer));
        },
        () => {},
      );
    });
  }

  serve(handler: (body: unknown) => Promise<unknown>): void {
    if (this.handler !== undefined) throw new Error('one server serves an in-memory mailbox');
    this.handler = handler;
  }
}

function asJson(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value)) as unknown;
}
