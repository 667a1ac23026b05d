// The "did you mean" of an unknown config key: the known key at the same level nearest by edit
// distance (insertions, deletions, substitutions and swaps of two neighbours, so `datacentre`
// finds `datacenter` at 1), offered only when at most a quarter of the name would change.

/** The nearest of `known` to `name`, or undefined when none is near enough to be the one meant. */
export function nearestKey(name: string, known: Iterable<string>): string | undefined {
  const limit = Math.max(1, Math.floor(name.length / 4));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of known) {
    const distance = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance || (distance === bestDistance && best !== undefined && candidate < best)) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= limit ? best : undefined;
}

/** Optimal string alignment distance: Levenshtein plus the swap of two neighbouring characters. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  const row0 = rows[0] as number[];
  for (let j = 0; j <= b.length; j++) row0[j] = j;
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i] as number[];
    const previous = rows[i - 1] as number[];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min((previous[j] as number) + 1, (row[j - 1] as number) + 1, (previous[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, ((rows[i - 2] as number[])[j - 2] as number) + 1);
      row[j] = d;
    }
  }
  return (rows[a.length] as number[])[b.length] as number;
}
