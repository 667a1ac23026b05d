// A bounded, uniform sample of many measurements (kv watcher wake-ups), for a CDF.

/** Keeps at most `cap` of the values offered, each equally likely (reservoir sampling), for a CDF. */
export class Samples {
  private readonly kept: number[] = [];
  count = 0;
  constructor(private readonly cap = 5000) {}
  add(value: number): void {
    this.count++;
    if (this.kept.length < this.cap) this.kept.push(value);
    else {
      const at = Math.floor(Math.random() * this.count);
      if (at < this.cap) this.kept[at] = value;
    }
  }
  sorted(): number[] {
    return [...this.kept].sort((a, b) => a - b);
  }
}
