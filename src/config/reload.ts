// What a reload can change while the agent runs, and what needs a restart: the two configs are
// compared key by key and each changed key is named as an operator writes it (snake_case, as in
// the config files). The agent applies the first list (src/agent/reload.ts) and logs both.
import type { AgentConfig } from './types.js';

export interface ReloadPlan {
  /** Changed keys the running agent takes. */
  readonly applied: readonly string[];
  /** Changed keys that take effect only after a restart. */
  readonly restartNeeded: readonly string[];
}

/** AgentConfig paths a reload applies (src/agent/reload.ts). */
const RELOADABLE = new Set([
  'logLevel',
  'acl.tokens.default',
  'acl.tokens.agent',
  'limits.httpMaxBodyBytes',
  'kvMaxValueSize',
  'defaultQueryTimeMs',
  'maxQueryTimeMs',
  'connect.leafRootChangeSpreadMs',
  // Anti-entropy reads it on each check update (src/local/anti-entropy.ts).
  'checkUpdateIntervalMs',
  'tls.certFile',
  'tls.keyFile',
  'tls.caFile',
  'tls.minVersion',
  'registrations.services',
  'registrations.checks',
]);

/** Where AgentConfig's shape differs from the file keys. */
const KEY_NAMES: Readonly<Record<string, string>> = {
  kvMaxValueSize: 'limits.kv_max_value_size',
  'connect.caConfig': 'connect.ca_config',
  tls: 'tls.defaults',
  registrations: '',
  'sidecarPorts.min': 'ports.sidecar_min_port',
  'sidecarPorts.max': 'ports.sidecar_max_port',
};

export function planReload(current: AgentConfig, next: AgentConfig): ReloadPlan {
  const applied: string[] = [];
  const restartNeeded: string[] = [];
  for (const path of changedPaths(current, next, ''))
    (RELOADABLE.has(path) ? applied : restartNeeded).push(fileKey(path));
  return { applied, restartNeeded };
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

/** `connect.caConfig.leafCertTtlMs` → `connect.ca_config.leaf_cert_ttl`. */
export function fileKey(path: string): string {
  let prefix = '';
  let rest = path;
  for (const [from, to] of Object.entries(KEY_NAMES)) {
    if (path === from || path.startsWith(`${from}.`)) {
      prefix = to;
      rest = path.slice(from.length + 1);
      break;
    }
  }
  const snake = rest
    .split('.')
    .filter((part) => part !== '')
    .map((part) => part.replace(/Ms$/, '').replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`))
    .join('.');
  return [prefix, snake].filter((part) => part !== '').join('.');
}
