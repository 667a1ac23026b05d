// Intention precedence (docs/decisions.md#intention-precedence): the exactness of the destination
// sets a ceiling (9, 6 or 3), each wildcard level of the source takes one off it; intentions are
// tried by precedence, then by the source/destination tuple so the order is deterministic.

export const WILDCARD = '*';

/** 2 when namespace and name are exact, 1 when only the name is `*`, 0 for `*` / `*`. */
export function exactCount(namespace: string, name: string): 0 | 1 | 2 {
  // Validation guarantees an exact name never follows a wildcard namespace.
  if (namespace === WILDCARD) return 0;
  return name === WILDCARD ? 1 : 2;
}

/** The 1-9 precedence of an intention from its (already defaulted) namespaces and names. */
export function intentionPrecedence(
  sourceNS: string,
  sourceName: string,
  destinationNS: string,
  destinationName: string,
): number {
  const ceiling = [3, 6, 9][exactCount(destinationNS, destinationName)] as number;
  return ceiling - (2 - exactCount(sourceNS, sourceName));
}

export interface PrecedenceFields {
  readonly Precedence: number;
  readonly SourceNS: string;
  readonly SourceName: string;
  readonly DestinationNS: string;
  readonly DestinationName: string;
}

/** Sort comparator: higher precedence first, then the (SourceNS, SourceName, DestinationNS, DestinationName) tuple. */
export function comparePrecedence(a: PrecedenceFields, b: PrecedenceFields): number {
  if (a.Precedence !== b.Precedence) return b.Precedence - a.Precedence;
  return (
    compareStrings(a.SourceNS, b.SourceNS) ||
    compareStrings(a.SourceName, b.SourceName) ||
    compareStrings(a.DestinationNS, b.DestinationNS) ||
    compareStrings(a.DestinationName, b.DestinationName)
  );
}

function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
