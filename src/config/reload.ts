// What a reload can change while the agent runs, and what needs a restart, as each key declares
// it (schema.ts, block-keys.ts): the two configs are compared field by field and each changed
// field is named by the key that sets it, as an operator writes it (snake_case, as in the config
// files). The agent applies the first list (src/agent/reload.ts) and logs both.
import { BLOCK_KEYS } from './block-keys.js';
import type { AgentPath, ReloadRule } from './reload-rule.js';
import { listConfigKeys } from './schema.js';
import type { AgentConfig } from './types.js';

export interface ReloadPlan {
  /** Changed keys the running agent takes. */
  readonly applied: readonly string[];
  /** Changed keys that take effect only after a restart. */
  readonly restartNeeded: readonly string[];
}

/** A key's reload rule with `sameAs` followed: `key` is the key a plan names for a change of it. */
export interface KeyReload {
  readonly key: string;
  readonly reload: 'applied' | 'restart';
  readonly agent: AgentPath;
  readonly why: string | undefined;
}

const DECLARED: readonly { readonly path: string; readonly reload: ReloadRule }[] = [
  ...listConfigKeys().map(({ path, key }) => ({ path, reload: key.reload })),
  ...BLOCK_KEYS,
];

/** Every declared key (file path) and how a reload treats it. */
export const KEY_RELOADS: ReadonlyMap<string, KeyReload> = resolve();

/** Each AgentConfig field, by the key that owns it. */
const OWNERS = new Map<string, KeyReload>(
  [...KEY_RELOADS].filter(([path, rule]) => path === rule.key).map(([, rule]) => [rule.agent, rule]),
);

export function planReload(current: AgentConfig, next: AgentConfig): ReloadPlan {
  const applied: string[] = [];
  const restartNeeded: string[] = [];
  for (const path of changedPaths(current, next, '')) {
    const owner = OWNERS.get(path);
    // Only -dev is no key's: it is a flag, the same on every reload the CLI makes.
    if (owner === undefined) restartNeeded.push(path);
    else (owner.reload === 'applied' ? applied : restartNeeded).push(owner.key);
  }
  return { applied, restartNeeded };
}

function resolve(): Map<string, KeyReload> {
  const rules = new Map(DECLARED.map(({ path, reload }) => [path, reload]));
  const out = new Map<string, KeyReload>();
  for (const { path, reload } of DECLARED) {
    const key = 'sameAs' in reload ? reload.sameAs : path;
    const target = rules.get(key);
    // A sameAs naming no key with a rule of its own leaves the key out (test/unit/config/reload.test.ts).
    if (target !== undefined && !('sameAs' in target))
      out.set(path, { key, reload: target.reload, agent: target.agent, why: target.why });
  }
  return out;
}

function changedPaths(a: unknown, b: unknown, path: string): string[] {
  if (isObject(a) && isObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].flatMap((key) => changedPaths(a[key], b[key], path === '' ? key : `${path}.${key}`));
  }
  if (Array.isArray(a) && Array.isArray(b))
    return a.length === b.length && a.every((x, i) => JSON.stringify(x) === JSON.stringify(b[i])) ? [] : [path];
  return Object.is(a, b) ? [] : [path];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
