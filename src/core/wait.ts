// Bounded waits: a caller that may go on without what it waited for.

/** Resolves when `wait` does, or after `ms`, whichever is first; a rejection of `wait` ends the wait too. */
export function settledWithin(wait: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    const done = (): void => {
      clearTimeout(timer);
      resolve();
    };
    wait.then(done, done);
  });
}
