// The intention index: an immutable snapshot of the intentions table, built in one pass whenever
// the table changes and swapped in whole (live.ts), so readers never see a half-built index. For
// each destination (namespace, name) the applicable intentions (exact, `ns/*`, `*/*`) are merged
// ahead of time and sorted by precedence, so a decision is two Map lookups and a short scan, and
// each entry carries its authorize decision already encoded. Plain data (Maps, arrays, frozen
// objects, bytes) that could be handed to another thread. Guarded by bench/micro/authorize.ts.
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
}

export interface IntentionIndex {
  /** The intentions table's index this snapshot reflects. */
  readonly tableIndex: number;
  /** Every intention, in precedence order. */
  readonly all: readonly IndexedIntention[];
  // Exact destinations: namespace → name → (exact ++ `ns/*` ++ `*/*`), precedence order.
  readonly byDestination: ReadonlyMap<string, ReadonlyMap<string, readonly IndexedIntention[]>>;
  // Destinations with no exact intention: namespace → (`ns/*` ++ `*/*`).
  readonly byNamespace: ReadonlyMap<string, readonly IndexedIntention[]>;
  // `*/*` destinations: all a wildcard-namespace destination or an unknown namespace sees.
  readonly wildcard: readonly IndexedIntention[];
  /** Legacy intentions by their ID. */
  readonly byId: ReadonlyMap<string, IndexedIntention>;
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
  const byNamespace = new Map<string, readonly IndexedIntention[]>();
  for (const [ns, list] of perNamespace) byNamespace.set(ns, freeze(list.concat(wildcard)));
  const byDestination = new Map<string, ReadonlyMap<string, readonly IndexedIntention[]>>();
  for (const [ns, names] of exact) {
    const tail = perNamespace.get(ns) ?? [];
    const merged = new Map<string, readonly IndexedIntention[]>();
    for (const [name, list] of names) merged.set(name, freeze(list.concat(tail, wildcard)));
    byDestination.set(ns, merged);
  }
  return { tableIndex, all: freeze(all), byDestination, byNamespace, wildcard: freeze(wildcard), byId };
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
export function destinationIntentions(
  index: IntentionIndex,
  namespace: string,
  name: string,
): readonly IndexedIntention[] {
  const names = index.byDestination.get(namespace);
  if (names !== undefined) {
    const list = names.get(name);
    if (list !== undefined) return list;
  }
  return index.byNamespace.get(namespace) ?? index.wildcard;
}

/**
 * The first intention (by precedence) whose source side matches the client. The name first: in a
 * destination's list most sources share the client's namespace and differ by name.
 */
export function firstSourceMatch(
  list: readonly IndexedIntention[],
  namespace: string,
  name: string,
): IndexedIntention | undefined {
  for (let i = 0; i < list.length; i++) {
    const entry = list[i] as IndexedIntention;
    const sourceName = entry.sourceName;
    if (sourceName !== undefined && sourceName !== name) continue;
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
