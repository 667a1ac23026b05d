// The one index clock of the state store: every commit takes the next index from here, so indexes
// are unique, strictly increasing in commit-call order, and never go back (even across restarts).

export class IndexClock {
  private last = 0;

  /** The last index handed out; 0 before the first write. */
  get current(): number {
    return this.last;
  }

  /** Takes the next index (the first call returns 1). */
  next(): number {
    return ++this.last;
  }

  /** Moves the clock forward to `index` (recovery); an older index is ignored, never applied. */
  restore(index: number): void {
    if (!Number.isSafeInteger(index) || index < 0) throw new RangeError(`invalid index ${index}`);
    if (index > this.last) this.last = index;
  }
}
