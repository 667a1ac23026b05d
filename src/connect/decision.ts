// The possible answers of the authorize decision, built ahead of time: the two defaults here, one
// per intention when the index is built (intentions/index.ts). Each holds the shared, frozen
// result and its compact JSON bytes as Go writes them, so answering allocates nothing.
import { encodeGoJson } from '../core/go-json.js';

export interface AuthorizeResult {
  readonly Authorized: boolean;
  readonly Reason: string;
}

/** One possible answer: the result object (shared, frozen) and its compact JSON bytes. */
export interface Decision {
  /** result.Authorized, read without loading the result (one cold object fewer per call). */
  readonly authorized: boolean;
  readonly result: AuthorizeResult;
  readonly json: Uint8Array;
}

const DEFAULT_REASON = 'Default behavior configured by ACLs';

/** An answer encoded once; every reason of a matched intention holds "=>", which Go escapes. */
export function decision(Authorized: boolean, Reason: string): Decision {
  const result = Object.freeze({ Authorized, Reason });
  return Object.freeze({ authorized: Authorized, result, json: Buffer.from(encodeGoJson(result)) });
}

export const DEFAULT_ALLOW: Decision = decision(true, DEFAULT_REASON);
export const DEFAULT_DENY: Decision = decision(false, DEFAULT_REASON);
