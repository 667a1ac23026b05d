// TCP to an echo application (the mesh scenario's upstream listener): each send writes a payload
// and reads it back whole. Per-connection (connect, write, read, close: one connection per send)
// or held (one connection, an exchange per send; reopened if it closes). A connection closed or
// reset before its first byte came back is REFUSED: what a sidecar does when the mesh will not
// carry it (an intention's deny, a failed handshake).
import { connect, type Socket } from 'node:net';
import type { HttpTarget } from './http-channel.js';
import type { Channel } from './scheduler.js';
import type { Outcome } from './types.js';

/** The payload came back whole: the generator's one name for served (a 2xx is what it counts as served). */
export const ECHOED: Outcome = Object.freeze({ status: 200 });
/** The connection ended before a byte came back. */
export const REFUSED: Outcome = Object.freeze({ error: 'refused-by-mesh' });

/** An error before the connection was up: the listener refused it, or nothing answered. */
function connectError(err: NodeJS.ErrnoException): string {
  return err.code === 'ECONNREFUSED' ? 'connect-refused' : `connect-${err.code ?? 'failed'}`;
}

export class EchoChannel implements Channel {
  private socket: Socket | undefined;
  private connected = false;
  /** Bytes of the payload read back on this connection so far (all exchanges). */
  private readOnSocket = 0;
  private readThisSend = 0;
  private done: ((outcome: Outcome) => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly target: HttpTarget,
    private readonly payload: Buffer,
    /** Keep the connection for the next send (long connections) instead of closing it after each. */
    private readonly held: boolean,
    private readonly timeoutMs = 10_000,
  ) {}

  send(): Promise<Outcome> {
    return new Promise((resolve) => this.start(resolve));
  }

  start(done: (outcome: Outcome) => void): void {
    this.done = done;
    this.readThisSend = 0;
    this.timer = setTimeout(() => {
      this.end({ error: 'timeout' });
      this.drop();
    }, this.timeoutMs);
    if (this.socket === undefined) this.open();
    else this.socket.write(this.payload);
  }

  /** Closes the held connection; an exchange in flight ends as `closed`. */
  close(): void {
    this.end({ error: 'closed' });
    this.drop();
  }

  private open(): void {
    this.connected = false;
    this.readOnSocket = 0;
    const socket = connect({ host: this.target.host, port: this.target.port, noDelay: true });
    this.socket = socket;
    socket.once('connect', () => {
      this.connected = true;
      socket.write(this.payload);
    });
    socket.on('data', (chunk: Buffer) => this.onData(socket, chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (this.socket !== socket) return;
      this.end(!this.connected ? { error: connectError(err) } : this.readOnSocket === 0 ? REFUSED : { error: 'reset' });
      this.drop();
    });
    socket.on('close', () => {
      if (this.socket !== socket) return;
      this.end(this.readOnSocket === 0 ? REFUSED : { error: 'closed' });
      this.drop();
    });
  }

  private onData(socket: Socket, chunk: Buffer): void {
    if (this.socket !== socket) return;
    const at = this.readThisSend;
    const expected = this.payload.subarray(at, at + chunk.length);
    this.readThisSend += chunk.length;
    this.readOnSocket += chunk.length;
    if (this.done === undefined || chunk.length > expected.length || !expected.equals(chunk)) {
      this.end({ error: 'mismatch' });
      this.drop();
    } else if (this.readThisSend === this.payload.length) {
      if (!this.held) this.drop();
      this.end(ECHOED);
    }
  }

  private drop(): void {
    this.socket?.destroy();
    this.socket = undefined;
  }

  private end(outcome: Outcome): void {
    clearTimeout(this.timer);
    const done = this.done;
    if (done === undefined) return;
    this.done = undefined;
    done(outcome);
  }
}
