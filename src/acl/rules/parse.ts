// Policy Rules text → ParsedRules (docs/decisions.md#acl-rules), HCL or JSON. A failure is a 400
// (docs/decisions.md D3) with Consul's text: `Failed to parse ACL rules: …` for text that does not
// parse or has the wrong shape, `Invalid <rule> policy: …` for a bad level.
import { agentError, type AgentError } from '../../core/errors.js';
import type { PolicyLevel } from '../types.js';
import { HclSyntaxError, hclToObject } from '../../core/hcl.js';
import {
  BLOCK_RULES,
  type BlockRule,
  mergeNamedRule,
  type NamedRule,
  type ParsedRules,
  SCALAR_RULES,
  type ScalarRule,
} from './model.js';

export type { ParsedRules } from './model.js';

const BLOCKS: ReadonlySet<string> = new Set(BLOCK_RULES);
const SCALARS: ReadonlySet<string> = new Set(SCALAR_RULES);

/** Parses and validates a policy's Rules. JSON when the text starts with `{`, HCL otherwise. */
export async function parseRules(text: string): Promise<ParsedRules> {
  let tree: unknown;
  if (/^\s*\{/.test(text)) {
    try {
      tree = JSON.parse(text);
    } catch (err) {
      throw syntax(err instanceof Error ? err.message : String(err));
    }
  } else {
    try {
      tree = await hclToObject(text);
    } catch (err) {
      if (err instanceof HclSyntaxError) throw syntax(err.detail);
      throw err;
    }
  }
  return normalizeRules(tree);
}

// Raw strings as written, gathered before any level is checked: shape errors come first (in
// Consul they are decode errors), then levels in Consul's validation order.
interface RawBlock {
  name: string;
  policy: string;
  intentions?: string;
}

/**
 * Validates the decoded document (the JSON object, or what the HCL converter made of the text)
 * and gives the canonical ParsedRules. Synchronous; exported for rules that arrive as objects.
 */
export function normalizeRules(tree: unknown): ParsedRules {
  if (!isObject(tree)) throw syntax('rules must be an object');
  const blocks = new Map<BlockRule, RawBlock[]>();
  const scalars = new Map<ScalarRule, string>();
  for (const [rule, value] of Object.entries(tree)) {
    if (SCALARS.has(rule)) {
      if (typeof value !== 'string') throw syntax(`${rule} must be a string, got ${describe(value)}`);
      scalars.set(rule as ScalarRule, value);
    } else if (BLOCKS.has(rule)) {
      const list = blocks.get(rule as BlockRule) ?? [];
      collectBlocks(rule as BlockRule, value, list);
      blocks.set(rule as BlockRule, list);
    } else {
      throw syntax(`unknown rule ${JSON.stringify(rule)}`);
    }
  }

  const out: Partial<Record<BlockRule, readonly NamedRule[]>> & Partial<Record<ScalarRule, PolicyLevel>> = {};
  const acl = scalars.get('acl');
  if (acl !== undefined) out.acl = scalarLevel('acl', acl);
  for (const rule of BLOCK_RULES) {
    const raw = blocks.get(rule);
    if (raw === undefined || raw.length === 0) continue;
    const merged = new Map<string, NamedRule>();
    for (const block of raw) mergeNamedRule(merged, blockRule(rule, block));
    out[rule] = [...merged.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }
  for (const rule of SCALAR_RULES) {
    const raw = scalars.get(rule);
    if (rule !== 'acl' && raw !== undefined) out[rule] = scalarLevel(rule, raw);
  }
  return out;
}

// A block rule's value: `{ <name>: <body> | <body>[] }` (HCL's converter, JSON), or a list of such
// objects (HCL v1's JSON form `"key": [{ "a": {…} }, { "b": {…} }]`).
function collectBlocks(rule: BlockRule, value: unknown, into: RawBlock[]): void {
  const groups = Array.isArray(value) ? value : [value];
  for (const group of groups) {
    if (!isObject(group)) throw syntax(`${rule} must be a block labelled with a name, got ${describe(group)}`);
    for (const [name, bodies] of Object.entries(group)) {
      for (const body of Array.isArray(bodies) ? bodies : [bodies]) into.push(blockBody(rule, name, body));
    }
  }
}

function blockBody(rule: BlockRule, name: string, body: unknown): RawBlock {
  const where = `${rule} ${JSON.stringify(name)}`;
  if (!isObject(body)) throw syntax(`${where} must be a block, got ${describe(body)}`);
  const withIntentions = rule === 'service' || rule === 'service_prefix';
  let policy = '';
  let intentions: string | undefined;
  for (const [attr, value] of Object.entries(body)) {
    if (attr !== 'policy' && !(attr === 'intentions' && withIntentions)) {
      throw syntax(`${where}: unknown attribute ${JSON.stringify(attr)}`);
    }
    if (typeof value !== 'string') throw syntax(`${where}: ${attr} must be a string, got ${describe(value)}`);
    if (attr === 'policy') policy = value;
    else intentions = value;
  }
  return intentions === undefined ? { name, policy } : { name, policy, intentions };
}

function blockRule(rule: BlockRule, block: RawBlock): NamedRule {
  const allowList = rule === 'key' || rule === 'key_prefix';
  const policy = level(block.policy, allowList);
  if (policy === undefined) {
    throw agentError('ACL_RULES_BAD_POLICY', { rule, name: block.name, policy: block.policy });
  }
  if (block.intentions === undefined) return { name: block.name, policy };
  const intentions = level(block.intentions, false);
  if (intentions === undefined) {
    throw agentError('ACL_RULES_BAD_INTENTIONS', { rule, name: block.name, intentions: block.intentions });
  }
  return { name: block.name, policy, intentions };
}

function scalarLevel(rule: ScalarRule, raw: string): PolicyLevel {
  const found = level(raw, false);
  if (found === undefined) throw agentError('ACL_RULES_BAD_LEVEL', { rule, policy: raw });
  return found;
}

/** Levels are case-insensitive; `list` exists for keys only. */
function level(raw: string, allowList: boolean): PolicyLevel | undefined {
  switch (raw.toLowerCase()) {
    case 'read':
      return 'read';
    case 'write':
      return 'write';
    case 'deny':
      return 'deny';
    case 'list':
      return allowList ? 'list' : undefined;
    default:
      return undefined;
  }
}

function syntax(detail: string): AgentError {
  return agentError('ACL_RULES_INVALID', { detail });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return `${typeof value} ${JSON.stringify(value)}`;
}
