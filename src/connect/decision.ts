// The possible answers of the authorize decision, built ahead of time: the two defaults here, one
// per intention when the index is built (index.ts). Each holds the shared, frozen result and its
// compact JSON bytes as Go writes them, so answering allocates nothing.
import { intentionString, isL7, type StoredIntention } from './intentions/model.js';

export interface AuthorizeResult {
  readonly Authorized: boolean;
  readonly Reason: string;
}

/** One possible answer: the result object (shared, frozen) and its compact JSON bytes. */
export interface Decision {
  readonly result: AuthorizeResult;
  readonly json: Uint8Array;
}

const DEFAULT_REASON = 'Default behavior configured by ACLs';

function decision(Authorized: boolean, Reason: string): Decision {
  const result = Object.freeze({ Authorized, Reason });
  return Object.freeze({ result, json: Buffer.from(goJson(result)) });
}

// Go's encoder escapes these inside strings (every reason holds "=>"); the HTTP layer's encoder
// does the same for everything else it writes.
const GO_ESCAPED = /[<>&\u2028\u2029]/g;

function goJson(value: AuthorizeResult): string {
  return JSON.stringify(value).replace(GO_ESCAPED, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export const DEFAULT_ALLOW: Decision = decision(true, DEFAULT_REASON);
export const DEFAULT_DENY: Decision = decision(false, DEFAULT_REASON);

/** The answer when `x` is the first match: L7 intentions always deny (§3.6). */
export function matchDecision(x: StoredIntention): Decision {
  if (isL7(x)) return decision(false, `Matched L7 intention: ${intentionString(x)}`);
  return decision(x.Action === 'allow', `Matched L4 intention: ${intentionString(x)}`);
}
