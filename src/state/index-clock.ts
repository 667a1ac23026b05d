// The one index clock of the state store: every commit takes the next index from here, so indexes
// are unique, strictly increasing in commit-call order, and never go back (even across restarts)
// past an index a commit was acknowledged or applied with.

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

  /**
   * Hands out `index + 1` next, forgetting later indexes: only for indexes taken by commits the
   * log refused (a full disk), which no reader ever saw and which must not leave a gap in the WAL.
   */
  rewindTo(index: number): void {
    if (!Number.isSafeInteger(index) || index < 0 || index > this.last) throw new RangeError(`invalid index ${index}`);
    this.last = index;
  }
}
