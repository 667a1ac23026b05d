// The roots as one immutable snapshot per roots change: the rows, the active root's facts that
// leaf issuance needs, and the ?pem=true chain. The HTTP layer encodes each snapshot's JSON once
// (handlers/connect-ca.ts), so no request re-encodes unchanged roots.
import type { Row } from '../../state/types.js';
import type { StoredRoot } from './model.js';

export interface RootsSnapshot {
  /** The roots table's index (what blocking queries on the roots compare against). */
  readonly index: number;
  readonly trustDomain: string;
  /** Empty when there is no active root. */
  readonly activeRootId: string;
  /** Colon-hex key ID that leaves of the active root carry as their AKI. */
  readonly activeSigningKeyId: string | undefined;
  /** The active root's intermediates, appended after every leaf (each ends in a newline). */
  readonly activeIntermediatesPem: string;
  /** Sorted by ID, as the store lists them. */
  readonly roots: readonly Row<StoredRoot>[];
  /** Every root followed by its intermediates (`?pem=true`). */
  readonly pem: string;
}

export function buildRootsSnapshot(
  rows: readonly Row<StoredRoot>[],
  trustDomain: string,
  index: number,
): RootsSnapshot {
  const active = rows.find((row) => row.value.Active)?.value;
  const chain = (r: StoredRoot): string => r.RootCert + (r.IntermediateCerts ?? []).join('');
  return Object.freeze({
    index,
    trustDomain,
    activeRootId: active?.ID ?? '',
    activeSigningKeyId: active?.SigningKeyID,
    activeIntermediatesPem: (active?.IntermediateCerts ?? []).join(''),
    roots: Object.freeze([...rows]),
    pem: rows.map((row) => chain(row.value)).join(''),
  });
}
