// The service and check blocks as config keys: outside schema.ts, since src/local/ validates their
// fields (registrations.ts takes them out of each file); declared here as schema.ts declares a key.
import { appliedRule, type ReloadRule } from './reload-rule.js';

export interface BlockKey {
  /** The block's key in a file; `service` and `check` are its one-block spellings. */
  readonly path: string;
  readonly doc: string;
  readonly reload: ReloadRule;
}

const APPLIED = 'a reload registers the new set: added, changed and removed';

export const BLOCK_KEYS: readonly BlockKey[] = [
  {
    path: 'services',
    doc: 'Services the agent registers at start (`service` for one), as in a PUT /v1/agent/service/register body.',
    reload: appliedRule('registrations.services', APPLIED),
  },
  {
    path: 'checks',
    doc: 'Checks the agent registers at start (`check` for one), as in a PUT /v1/agent/check/register body.',
    reload: appliedRule('registrations.checks', APPLIED),
  },
];
