// A probe's output kept to its size as Consul's circular buffer keeps it: the last bytes.
export class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.chunks.length > 1 && this.size - (this.chunks[0] as Buffer).length >= this.max) {
      this.size -= (this.chunks.shift() as Buffer).length;
    }
  }

  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.max)).toString('utf8');
  }
}

export interface ProbeResult {
  readonly status: 'passing' | 'warning' | 'critical';
  readonly output: string;
}

/** Consul's default check timeout when the check sets none. */
export const DEFAULT_PROBE_TIMEOUT_MS = 10_000;
