// Keys and values the agent took once and takes no more. A layer that still sets one loads: the
// setting is dropped (or mapped to what replaced it) with a warning naming it and its replacement,
// as Consul treats its deprecated keys, so an upgrade does not stop an agent over a tuning knob.
import { getPath, withPath, withoutPath, type PlainObject } from './object.js';

const CPU_POLICY = 'CPU policy for the whole service is the operator\'s to set (README, "CPU policy")';

/** Keys that no longer exist, by dotted path, with what replaced them. */
const REMOVED_KEYS: readonly { readonly path: string; readonly instead: string }[] = [
  {
    path: 'performance.event_loop_slice',
    instead: `the agent no longer changes its event loop's scheduler slice; ${CPU_POLICY}`,
  },
  {
    path: 'performance.v8_threads',
    instead: `the agent no longer changes the scheduling of V8's threads; ${CPU_POLICY}`,
  },
];

/** Values a key no longer takes, with the value they now stand for. */
const RETIRED_VALUES: readonly {
  readonly path: string;
  readonly value: string;
  readonly becomes: string;
  readonly why: string;
}[] = [
  {
    path: 'connect.signing_priority',
    value: 'idle',
    becomes: 'low',
    why: `the agent no longer puts threads under SCHED_IDLE; "low" runs them at nice +10; ${CPU_POLICY}`,
  },
];

/** The layer without removed keys and with retired values replaced, and one warning for each. */
export function dropDeprecated(layer: PlainObject): { values: PlainObject; warnings: string[] } {
  const warnings: string[] = [];
  let values = layer;
  for (const { path, instead } of REMOVED_KEYS) {
    const parts = path.split('.');
    if (getPath(values, parts) === undefined) continue;
    values = withoutPath(values, parts);
    warnings.push(`${path} is deprecated and has no effect: ${instead}`);
  }
  for (const { path, value, becomes, why } of RETIRED_VALUES) {
    const parts = path.split('.');
    if (getPath(values, parts) !== value) continue;
    values = withPath(values, parts, becomes);
    warnings.push(`${path} ${JSON.stringify(value)} is deprecated and means ${JSON.stringify(becomes)}: ${why}`);
  }
  return { values, warnings };
}
