// The intention index: an immutable snapshot of the intentions table, built in one pass whenever
// the table changes and swapped in whole (live.ts), so readers never see a half-built index. For
// each destination (namespace, name) the applicable intentions (exact, `ns/*`, `*/*`) are merged
// ahead of time and sorted by precedence; each of those three groups keeps its exact sources keyed
// by name, built once however many lists it ends, so a decision is a few Map lookups and a scan of
// the wildcard sources, however many sources a destination has, and the index stays linear in the
// intentions. The pairs most calls name (an exact source calling an exact destination) are also
// found by their two names alone, in two lookups. Each entry carries its authorize decision
// already encoded. Plain data (Maps, arrays, frozen objects, bytes) that could be handed to
// another thread. Guarded by bench/micro/authorize.ts.
import type { Row } from '../../state/types.js';
import { decision, type Decision } from '../decision.js';
import { intentionString, isL7, type StoredIntention } from './model.js';
import { comparePrecedence, WILDCARD } from './precedence.js';

export interface IndexedIntention {
  readonly key: string;
  readonly row: Row<StoredIntention>;
  /** The authorize answer when this intention is the first match. */
  readonly decision: Decision;
  /** The intention-check answer: allow and not L7, as Consul's `check` answers. */
  readonly allowed: boolean;
  /** The source's namespace and name, undefined where `*`: the match compares one string, not two. */
  readonly sourceNamespace: string | undefined;
  readonly sourceName: string | undefined;
  /** The destination's namespace, undefined where `*`: ownGroupByName checks it without the row. */
  readonly destinationNamespace: string | undefined;
}

export interface IntentionIndex {
  /** The intentions table's index this snapshot reflects. */
  readonly tableIndex: number;
  /** Every intention, in precedence order. */
  readonly all: readonly IndexedIntention[];
  // Exact destinations: namespace → name → (exact ++ `ns/*` ++ `*/*`), precedence order.
  readonly byDestination: ReadonlyMap<string, ReadonlyMap<string, DestinationIntentions>>;
  // Destinations with no exact intention: namespace → (`ns/*` ++ `*/*`).
  readonly byNamespace: ReadonlyMap<string, DestinationIntentions>;
  // `*/*` destinations: all a wildcard-namespace destination or an unknown namespace sees.
  readonly wildcard: DestinationIntentions;
  /** Legacy intentions by their ID. */
  readonly byId: ReadonlyMap<string, IndexedIntention>;
  /**
   * An exact destination's own group found by the destination's name alone (the first namespace's,
   * where names repeat): its entries by source name, namespaces on them. The match most calls
   * find, in two lookups that touch few objects: the walk through a destination's Maps, groups
   * and lists touched a dozen cold ones per call, which cost more than the lookups
   * (bench/HISTORY.md). Shared with the groups, so it costs a rebuild one Map entry per name.
   */
  readonly ownGroupByName: ReadonlyMap<string, ReadonlyMap<string, readonly IndexedIntention[]>>;
}

/** What one destination sees: its intentions in precedence order, and the same found by source. */
export interface DestinationIntentions {
  readonly list: readonly IndexedIntention[];
  /**
   * `list`'s groups (the destination's own, its namespace's `ns/*`, the `*` destinations), each
   * searchable by source. Groups never overlap in precedence, so the first group with a match
   * holds the list's first match; a group is built once and shared by every list it ends.
   */
  readonly groups: readonly SourceLookup[];
}

/**
 * One group of intentions found by the client's source. Within a group an exact source outranks a
 * namespace's wildcard, which outranks the all-sources wildcard (precedence 9, 8, 7; 6, 5, 4; ...):
 * an exact match, if any, wins.
 */
export interface SourceLookup {
  /**
   * The entries naming an exact source, by source name, in precedence order. Names, not
   * (namespace, name) pairs: a client's name is looked up as it arrives, no key string is built.
   */
  readonly bySourceName: ReadonlyMap<string, readonly IndexedIntention[]>;
  /** The entries whose source name is `*` (a namespace wildcard or all), in precedence order. */
  readonly wildcardSources: readonly IndexedIntention[];
}

/** An entry for a row: its decision encoded now. */
export function indexedIntention(row: Row<StoredIntention>): IndexedIntention {
  const x = row.value;
  return {
    key: row.key,
    row,
    decision: matchDecision(x),
    allowed: !isL7(x) && x.Action === 'allow',
    sourceNamespace: x.SourceNS === WILDCARD ? undefined : x.SourceNS,
    sourceName: x.SourceName === WILDCARD ? undefined : x.SourceName,
    destinationNamespace: x.DestinationNS === WILDCARD ? undefined : x.DestinationNS,
  };
}

/** The answer when `x` is the first match: L7 intentions always deny, as Consul's authorize does. */
function matchDecision(x: StoredIntention): Decision {
  if (isL7(x)) return decision(false, `Matched L7 intention: ${intentionString(x)}`);
  return decision(x.Action === 'allow', `Matched L4 intention: ${intentionString(x)}`);
}

/** Builds a snapshot; `entryOf` may hand back an unchanged entry of the previous snapshot. */
export function buildIntentionIndex(
  rows: readonly Row<StoredIntention>[],
  tableIndex: number,
  entryOf: (row: Row<StoredIntention>) => IndexedIntention = indexedIntention,
): IntentionIndex {
  const all: IndexedIntention[] = rows.map(entryOf);
  all.sort((a, b) => comparePrecedence(a.row.value, b.row.value));

  // One pass in precedence order: each group comes out already sorted.
  const exact = new Map<string, Map<string, IndexedIntention[]>>();
  const perNamespace = new Map<string, IndexedIntention[]>();
  const wildcard: IndexedIntention[] = [];
  const byId = new Map<string, IndexedIntention>();
  for (const entry of all) {
    const { DestinationNS: ns, DestinationName: name, ID } = entry.row.value;
    if (ID !== undefined) byId.set(ID, entry);
    if (ns === WILDCARD) wildcard.push(entry);
    else if (name === WILDCARD) push(perNamespace, ns, entry);
    else {
      let names = exact.get(ns);
      if (names === undefined) exact.set(ns, (names = new Map()));
      push(names, name, entry);
    }
  }

  // Precedence ranges do not overlap (exact 7-9, ns/* 4-6, */* 1-3): merging is concatenation.
  const wildcardLookup = sourceLookup(wildcard);
  const namespaceLookups = new Map<string, SourceLookup>();
  const byNamespace = new Map<string, DestinationIntentions>();
  for (const [ns, list] of perNamespace) {
    const lookup = sourceLookup(list);
    namespaceLookups.set(ns, lookup);
    byNamespace.set(ns, { list: freeze(list.concat(wildcard)), groups: freeze([lookup, wildcardLookup]) });
  }
  const byDestination = new Map<string, ReadonlyMap<string, DestinationIntentions>>();
  const ownGroupByName = new Map<string, ReadonlyMap<string, readonly IndexedIntention[]>>();
  for (const [ns, names] of exact) {
    const tail = perNamespace.get(ns) ?? [];
    const tailLookup = namespaceLookups.get(ns);
    const merged = new Map<string, DestinationIntentions>();
    for (const [name, list] of names) {
      const own = sourceLookup(list);
      const groups = tailLookup === undefined ? [own, wildcardLookup] : [own, tailLookup, wildcardLookup];
      merged.set(name, { list: freeze(list.concat(tail, wildcard)), groups: freeze(groups) });
      if (!ownGroupByName.has(name)) ownGroupByName.set(name, own.bySourceName);
    }
    byDestination.set(ns, merged);
  }
  const wildcardOnly = { list: freeze(wildcard), groups: freeze([wildcardLookup]) };
  return { tableIndex, all: freeze(all), byDestination, byNamespace, wildcard: wildcardOnly, byId, ownGroupByName };
}

/** A group's lookup by source (the group already in precedence order). */
function sourceLookup(group: readonly IndexedIntention[]): SourceLookup {
  const bySourceName = new Map<string, IndexedIntention[]>();
  const wildcardSources: IndexedIntention[] = [];
  for (const entry of group) {
    if (entry.sourceName === undefined) wildcardSources.push(entry);
    else push(bySourceName, entry.sourceName, entry);
  }
  return { bySourceName, wildcardSources };
}

function push<K>(map: Map<K, IndexedIntention[]>, key: K, entry: IndexedIntention): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [entry]);
  else list.push(entry);
}

function freeze<T>(list: T[]): readonly T[] {
  return Object.freeze(list);
}

/** A destination's intentions in precedence order (docs/decisions.md#intention-precedence). */
export function destinationIntentions(index: IntentionIndex, namespace: string, name: string): DestinationIntentions {
  const names = index.byDestination.get(namespace);
  if (names !== undefined) {
    const found = names.get(name);
    if (found !== undefined) return found;
  }
  return index.byNamespace.get(namespace) ?? index.wildcard;
}

/**
 * The first intention (by precedence) whose source side matches the client: in the first group
 * that has one, the first of the client's name that names its namespace too, else the first
 * wildcard source that covers it.
 */
export function firstSourceMatch(
  destination: DestinationIntentions,
  namespace: string,
  name: string,
): IndexedIntention | undefined {
  const groups = destination.groups;
  for (let g = 0; g < groups.length; g++) {
    const group = groups[g] as SourceLookup;
    const named = group.bySourceName.get(name);
    const match =
      (named === undefined ? undefined : firstIn(named, namespace)) ?? firstIn(group.wildcardSources, namespace);
    if (match !== undefined) return match;
  }
  return undefined;
}

/** The first intention by precedence whose source side matches a client, as firstSourceMatch finds it. */
export function firstMatch(
  index: IntentionIndex,
  namespace: string,
  name: string,
  sourceNamespace: string,
  sourceName: string,
): IndexedIntention | undefined {
  // The own group's first entry for the name, if it names the client's namespace, is the match
  // (an exact source outranks a wildcard); any other case takes the general path.
  const first = index.ownGroupByName.get(name)?.get(sourceName)?.[0];
  if (first !== undefined && first.destinationNamespace === namespace && first.sourceNamespace === sourceNamespace)
    return first;
  return firstSourceMatch(destinationIntentions(index, namespace, name), sourceNamespace, sourceName);
}

/** The first entry whose source namespace is the client's or `*`. */
function firstIn(entries: readonly IndexedIntention[], namespace: string): IndexedIntention | undefined {
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as IndexedIntention;
    const sourceNamespace = entry.sourceNamespace;
    if (sourceNamespace === undefined || sourceNamespace === namespace) return entry;
  }
  return undefined;
}

// Intentions whose source side covers (namespace, name): `*/*`, `ns/*` and the exact pair.
export function sourceIntentions(index: IntentionIndex, namespace: string, name: string): IndexedIntention[] {
  return index.all.filter((entry) => {
    const x = entry.row.value;
    if (x.SourceNS === WILDCARD) return true;
    if (namespace === WILDCARD || x.SourceNS !== namespace) return false;
    return x.SourceName === WILDCARD || (name !== WILDCARD && x.SourceName === name);
  });
}
