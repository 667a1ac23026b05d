// The keys, values and response shapes every HTTP bench shares, so the ceiling answers with the
// same bytes the agent's KV GET does and ratios compare like with like.

/** The key the GET scenarios read; seeded once before the run. */
export const GET_KEY = 'bench/get';
/** The key the PUT scenarios overwrite (one key, so the store does not grow during a run). */
export const PUT_KEY = 'bench/put';
/** The key the fan-out bench parks its blocking queries on. */
export const FANOUT_KEY = 'bench/fanout';

/** A tiny value: with GET_KEY the GET response is ~94 bytes, the size the ceiling answers. */
export const VALUE = 'v1';

/** Consul's KV GET entry for `key` holding `value` at `index` (Value is base64). */
export function kvGetBody(key: string, value: string, index: number): string {
  const entry = {
    LockIndex: 0,
    Key: key,
    Flags: 0,
    Value: Buffer.from(value).toString('base64'),
    CreateIndex: index,
    ModifyIndex: index,
  };
  return JSON.stringify([entry]);
}

/**
 * What the ceiling server answers to every GET: the body the agent sends for GET_KEY, with an
 * index of the same width, so bytes on the wire match within a few.
 */
export const CEILING_GET_BODY = kvGetBody(GET_KEY, VALUE, 12);
