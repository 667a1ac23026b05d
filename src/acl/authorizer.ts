// Compiles a token's policies (and its identities' synthetic policies) into an Authorizer
// (docs/decisions.md#acl-rules). Everything that can be decided per token is decided here, once:
// merging, intentions derivation, the mesh/peering → operator fallback, the wildcard answers. A
// request's decision is then a field read (scalars) or one walk of a small radix tree (named
// resources). Hot file: bench/micro/acl-authorizer.ts guards it.
import { type NodeIdentity, type ServiceIdentity, identityRules } from './rules/identities.js';
import {
  BLOCK_RULES,
  type BlockRule,
  mergeNamedRule,
  type NamedRule,
  type ParsedRules,
  stronger,
} from './rules/model.js';
import { NameIndex, NONE } from './rules/name-index.js';
import type { Access, Authorizer, PolicyLevel, Resource } from './types.js';

export interface CompileInput {
  readonly policies: readonly ParsedRules[];
  readonly serviceIdentities?: readonly ServiceIdentity[] | undefined;
  readonly nodeIdentities?: readonly NodeIdentity[] | undefined;
  /** The local datacenter: identities scoped elsewhere contribute nothing. */
  readonly datacenter: string;
  readonly defaultPolicy: 'allow' | 'deny';
}

// Access bits and, per level, the bits it grants: write ⊇ list ⊇ read; deny grants none.
const READ = 1;
const LIST = 2;
const WRITE = 4;
const ALL = READ | LIST | WRITE;
const MASK: Readonly<Record<PolicyLevel, number>> = { deny: 0, read: READ, list: READ | LIST, write: ALL };

const bitOf = (access: Access): number => (access === 'read' ? READ : access === 'write' ? WRITE : LIST);

interface PrefixRule {
  readonly prefix: string;
  readonly mask: number;
}

/** One named resource's rules: the lookup tree, plus the flat views the rarer questions walk. */
class ResourceRules {
  readonly index = new NameIndex();
  /** Prefix rules, `""` included, longest first (keyWritePrefix's covering rule is the first hit). */
  readonly prefixes: readonly PrefixRule[];
  /** Names of the rules, exact or prefix, that do not grant write (keyWritePrefix's "beneath" test). */
  readonly lackingWrite: readonly string[];
  /** The `""` prefix rule's mask, or NONE. */
  readonly root: number;
  /** Every rule's mask: the wildcard questions look at all of them. */
  readonly masks: readonly number[];

  constructor(exact: Iterable<NamedRule>, prefix: Iterable<NamedRule>, levelOf: (r: NamedRule) => PolicyLevel) {
    const masks: number[] = [];
    const lackingWrite: string[] = [];
    const prefixes: PrefixRule[] = [];
    const add = (r: NamedRule, isPrefix: boolean): void => {
      const mask = MASK[levelOf(r)];
      this.index.set(r.name, isPrefix, mask);
      masks.push(mask);
      if (mask !== ALL) lackingWrite.push(r.name);
      if (isPrefix) prefixes.push({ prefix: r.name, mask });
    };
    for (const r of exact) add(r, false);
    for (const r of prefix) add(r, true);
    prefixes.sort((a, b) => b.prefix.length - a.prefix.length);
    this.prefixes = prefixes;
    this.lackingWrite = lackingWrite;
    this.root = prefixes.find((p) => p.prefix === '')?.mask ?? NONE;
    this.masks = masks;
  }
}

/** One resource's precomputed answers. `rules` is null for scalars, whose answer is `mask`. */
interface Table {
  readonly rules: ResourceRules | null;
  readonly mask: number;
  /** What no rule means: the default policy, except that `acl` is never granted by default. */
  readonly fallback: number;
  /** Bits for which some rule grants (else the `""` rule or the fallback decides). */
  readonly anyMask: number;
  /** Bits that every rule grants, and the `""` rule or the fallback too. */
  readonly allMask: number;
}

class CompiledAuthorizer implements Authorizer {
  constructor(
    private readonly tables: Readonly<Record<Resource, Table>>,
    private readonly keys: ResourceRules,
    readonly defaultAllow: boolean,
  ) {}

  allowed(resource: Resource, access: Access, name?: string): boolean {
    const t = this.tables[resource];
    const bit = bitOf(access);
    if (t.rules === null) return ((t.mask < 0 ? t.fallback : t.mask) & bit) !== 0;
    // Consul reads an intention check on `*` as a wildcard question: any for read, all for write.
    if (name === '*' && resource === 'intention') return ((bit === WRITE ? t.allMask : t.anyMask) & bit) !== 0;
    const mask = t.rules.index.lookup(name ?? '');
    return ((mask < 0 ? t.fallback : mask) & bit) !== 0;
  }

  keyWritePrefix(prefix: string): boolean {
    // Write on the longest prefix rule covering `prefix` (exact rules do not count here)…
    let base = NONE;
    for (const p of this.keys.prefixes) {
      if (prefix.startsWith(p.prefix)) {
        base = p.mask;
        break;
      }
    }
    if (base !== NONE && base !== ALL) return false;
    // …and no rule at or beneath it, exact or prefix, that lacks write.
    for (const name of this.keys.lackingWrite) if (name.startsWith(prefix)) return false;
    if (base === ALL) return true;
    return (this.tables.key.fallback & WRITE) !== 0;
  }

  anyAllowed(resource: Resource, access: Access): boolean {
    return (this.tables[resource].anyMask & bitOf(access)) !== 0;
  }

  allAllowed(resource: Resource, access: Access): boolean {
    return (this.tables[resource].allMask & bitOf(access)) !== 0;
  }
}

/** Merges the policies and the identities' policies that apply, then builds the lookup tables. */
export function compileAuthorizer(input: CompileInput): Authorizer {
  const policies = [
    ...input.policies,
    ...identityRules(input.datacenter, input.serviceIdentities, input.nodeIdentities),
  ];
  const blocks = new Map<BlockRule, Map<string, NamedRule>>(BLOCK_RULES.map((r) => [r, new Map()]));
  let acl: PolicyLevel | undefined;
  let keyring: PolicyLevel | undefined;
  let operator: PolicyLevel | undefined;
  let mesh: PolicyLevel | undefined;
  let peering: PolicyLevel | undefined;
  for (const p of policies) {
    for (const rule of BLOCK_RULES) {
      const rules = p[rule];
      if (rules === undefined) continue;
      const into = blocks.get(rule) as Map<string, NamedRule>;
      for (const r of rules) mergeNamedRule(into, r);
    }
    acl = stronger(acl, p.acl);
    keyring = stronger(keyring, p.keyring);
    operator = stronger(operator, p.operator);
    mesh = stronger(mesh, p.mesh);
    peering = stronger(peering, p.peering);
  }

  const defaultMask = input.defaultPolicy === 'allow' ? ALL : 0;
  const rulesOf = (r: BlockRule): Iterable<NamedRule> => (blocks.get(r) as Map<string, NamedRule>).values();
  const named = (exact: BlockRule, prefix: BlockRule, levelOf: (r: NamedRule) => PolicyLevel = policyOf): Table =>
    namedTable(new ResourceRules(rulesOf(exact), rulesOf(prefix), levelOf), defaultMask);
  const operatorMask = operator === undefined ? NONE : MASK[operator];

  const key = new ResourceRules(rulesOf('key'), rulesOf('key_prefix'), policyOf);
  const tables: Record<Resource, Table> = {
    // Consul's allow-all root grants everything but ACL management: `acl` falls through to deny.
    acl: scalarTable(acl === undefined ? NONE : MASK[acl], 0),
    agent: named('agent', 'agent_prefix'),
    event: named('event', 'event_prefix'),
    intention: named('service', 'service_prefix', intentionsOf),
    key: namedTable(key, defaultMask),
    keyring: scalarTable(keyring === undefined ? NONE : MASK[keyring], defaultMask),
    node: named('node', 'node_prefix'),
    operator: scalarTable(operatorMask, defaultMask),
    // mesh and peering fall back to operator when unset.
    mesh: scalarTable(mesh === undefined ? operatorMask : MASK[mesh], defaultMask),
    peering: scalarTable(peering === undefined ? operatorMask : MASK[peering], defaultMask),
    query: named('query', 'query_prefix'),
    service: named('service', 'service_prefix'),
    session: named('session', 'session_prefix'),
  };
  return new CompiledAuthorizer(tables, key, input.defaultPolicy === 'allow');
}

const policyOf = (r: NamedRule): PolicyLevel => r.policy;

/** A service rule's intentions level: explicit, else read for read/write and deny for deny. */
const intentionsOf = (r: NamedRule): PolicyLevel =>
  r.intentions ?? (r.policy === 'read' || r.policy === 'write' ? 'read' : 'deny');

function scalarTable(mask: number, fallback: number): Table {
  const effective = mask < 0 ? fallback : mask;
  return { rules: null, mask, fallback, anyMask: effective, allMask: effective };
}

function namedTable(rules: ResourceRules, fallback: number): Table {
  let anyMask = 0;
  let allMask = 0;
  for (const bit of [READ, LIST, WRITE]) {
    // any: one rule granting is enough; otherwise a `""` rule has said no, or the fallback decides.
    const someGrants = rules.masks.some((m) => (m & bit) !== 0);
    if (someGrants || (rules.root === NONE && (fallback & bit) !== 0)) anyMask |= bit;
    // all: one rule lacking it blocks; otherwise the `""` rule (which granted) or the fallback decides.
    const noneLacks = rules.masks.every((m) => (m & bit) !== 0);
    if (noneLacks && (rules.root !== NONE || (fallback & bit) !== 0)) allMask |= bit;
  }
  return { rules, mask: NONE, fallback, anyMask, allMask };
}

/** ACLs disabled: every check passes, ACL management included (Consul's manage-all). */
export const allowAllAuthorizer: Authorizer = Object.freeze({
  allowed: (): boolean => true,
  keyWritePrefix: (): boolean => true,
  anyAllowed: (): boolean => true,
  allAllowed: (): boolean => true,
  defaultAllow: true,
});
