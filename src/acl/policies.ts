// ACL policy operations without HTTP (docs/decisions.md#acl-api): create, read (by ID or name),
// update, delete and list, with Consul's validation order and texts (its PolicySet). Rules are
// parsed once, here, and stored beside the text. User mistakes are 4xx (docs/decisions.md D3): 400
// for validation, 404 for a missing policy, 409 for a name in use. Writes share the ACL WriteLock.
import { createHash } from 'node:crypto';
import { agentError } from '../core/errors.js';
import { generateId, isUuid } from '../core/ids.js';
import type { Row, StateStore, WriteOp } from '../state/types.js';
import { GLOBAL_MANAGEMENT_POLICY_ID, RESERVED_ID_PREFIX } from './builtin.js';
import { limitPolicy } from './limits.js';
import { ACL_POLICIES, type StoredPolicy } from './model.js';
import { policyJson, policyStubJson } from './render.js';
import { parseRules, type ParsedRules } from './rules/parse.js';
import { WriteLock, writeRaced } from './write-lock.js';

/** A policy write's body, decoded. `Datacenters` is undefined when the key was absent or null. */
export interface PolicyInput {
  readonly ID?: string | undefined;
  readonly Name?: string | undefined;
  readonly Description?: string | undefined;
  readonly Rules?: string | undefined;
  readonly Datacenters?: readonly string[] | undefined;
}

export interface AclPoliciesOptions {
  /** Shared with AclTokens so that every ACL write is serialized. */
  readonly lock?: WriteLock;
  /** The rule parser; tests may stub it. */
  readonly parseRules?: (text: string) => Promise<ParsedRules>;
}

const POLICY_NAME_MAX = 128;
// Newest Consul: letters, digits, '-' and '_', with at most one '/' inside the name.
const POLICY_NAME = /^[A-Za-z0-9\-_]+\/?[A-Za-z0-9\-_]*$/;
const RESERVED_NAME_PREFIX = 'builtin/';

/** The policy whose name matches, ignoring case (Consul's name index is lowercased). */
export function findPolicyByName(store: StateStore, name: string): Row<StoredPolicy> | undefined {
  const wanted = name.toLowerCase();
  return store.list<StoredPolicy>(ACL_POLICIES, '').find((row) => row.value.Name.toLowerCase() === wanted);
}

/** Consul's ValidatePolicyName, with its three texts. */
export function validatePolicyName(name: string): void {
  if (name.length < 1 || name.length > POLICY_NAME_MAX) {
    throw agentError('ACL_POLICY_NAME_LENGTH', { max: POLICY_NAME_MAX });
  }
  if (name.startsWith('/') || name.startsWith(RESERVED_NAME_PREFIX)) {
    throw agentError('ACL_POLICY_NAME_PREFIX', { prefix: RESERVED_NAME_PREFIX });
  }
  if (!POLICY_NAME.test(name)) {
    throw agentError('ACL_POLICY_NAME_CHARS');
  }
}

export class AclPolicies {
  private readonly lock: WriteLock;
  private readonly parse: (text: string) => Promise<ParsedRules>;

  constructor(
    private readonly store: StateStore,
    options: AclPoliciesOptions = {},
  ) {
    this.lock = options.lock ?? new WriteLock();
    this.parse = options.parseRules ?? parseRules;
  }

  view(row: Row<StoredPolicy>): Record<string, unknown> {
    return policyJson(row);
  }

  stub(row: Row<StoredPolicy>): Record<string, unknown> {
    return policyStubJson(row);
  }

  read(id: string): Row<StoredPolicy> | undefined {
    return this.store.get<StoredPolicy>(ACL_POLICIES, id);
  }

  readByName(name: string): Row<StoredPolicy> | undefined {
    return findPolicyByName(this.store, name);
  }

  /** Every policy, sorted by ID. */
  list(): Row<StoredPolicy>[] {
    return this.store.list<StoredPolicy>(ACL_POLICIES, '');
  }

  /** PUT /v1/acl/policy. */
  create(input: PolicyInput): Promise<Row<StoredPolicy>> {
    if (input.ID) return Promise.reject(agentError('ACL_POLICY_ID_SET'));
    return this.lock.run(() => this.upsert('', input));
  }

  /** PUT /v1/acl/policy/:id. The built-in may be renamed and re-described, never re-ruled. */
  update(id: string, input: PolicyInput): Promise<Row<StoredPolicy>> {
    if (input.ID && input.ID !== id) return Promise.reject(agentError('ACL_POLICY_ID_MISMATCH'));
    return this.lock.run(() => this.upsert(id, input));
  }

  /** DELETE /v1/acl/policy/:id. Deleting a policy that does not exist succeeds, as in Consul. */
  delete(id: string): Promise<void> {
    return this.lock.run(async () => {
      const row = this.read(id);
      if (row === undefined) return;
      if (id === GLOBAL_MANAGEMENT_POLICY_ID) throw agentError('ACL_POLICY_BUILTIN_DELETE');
      const result = await this.store.commit([
        { op: 'delete', table: ACL_POLICIES, key: id, ifIndex: row.modifyIndex },
      ]);
      if (!result.ok) throw writeRaced();
    });
  }

  /** Consul's PolicySet: an empty ID creates, any other updates. */
  private async upsert(id: string, input: PolicyInput): Promise<Row<StoredPolicy>> {
    const name = input.Name ?? '';
    if (name === '') throw agentError('ACL_POLICY_NO_NAME');
    validatePolicyName(name);
    let existing: Row<StoredPolicy> | undefined;
    if (id !== '') {
      if (!isUuid(id)) throw agentError('ACL_POLICY_ID_NOT_UUID');
      existing = this.read(id);
    }
    // Our size limits (docs/decisions.md#size-limits) after Consul's checks of the name, before the parse.
    limitPolicy(input);
    const sameName = findPolicyByName(this.store, name);
    const rules = input.Rules ?? '';
    let op: WriteOp;
    if (id === '') {
      if (sameName !== undefined) {
        throw agentError('ACL_POLICY_NAME_IN_USE', { name });
      }
      id = this.freshId();
      op = { op: 'set', table: ACL_POLICIES, key: id, value: undefined, ifIndex: 0 };
    } else {
      if (existing === undefined) throw agentError('ACL_POLICY_NOT_FOUND', { id });
      if (sameName !== undefined && sameName.key !== id) {
        throw agentError('ACL_POLICY_RENAME_IN_USE', { name });
      }
      if (id === GLOBAL_MANAGEMENT_POLICY_ID) {
        if (input.Datacenters !== undefined) {
          throw agentError('ACL_POLICY_BUILTIN_DATACENTERS');
        }
        if (rules !== existing.value.Rules) throw agentError('ACL_POLICY_BUILTIN_RULES');
      }
      op = { op: 'set', table: ACL_POLICIES, key: id, value: undefined, ifIndex: existing.modifyIndex };
    }
    const parsed = await this.parse(rules);
    const datacenters = input.Datacenters !== undefined && input.Datacenters.length > 0 ? [...input.Datacenters] : null;
    const description = input.Description ?? '';
    const policy: StoredPolicy = {
      ID: id,
      Name: name,
      Description: description,
      Rules: rules,
      Datacenters: datacenters,
      Hash: policyHash(name, description, rules, datacenters),
      Parsed: parsed,
    };
    const result = await this.store.commit([{ ...op, value: policy }]);
    if (!result.ok) throw writeRaced();
    const row = this.read(id);
    if (row === undefined) throw agentError('ACL_POLICY_LOST');
    return row;
  }

  private freshId(): string {
    for (;;) {
      const id = generateId();
      if (!id.startsWith(RESERVED_ID_PREFIX) && this.read(id) === undefined) return id;
    }
  }
}

/** Like Consul's policy hash: over everything a client would notice changing, base64 in JSON. */
export function policyHash(
  name: string,
  description: string,
  rules: string,
  datacenters: readonly string[] | null,
): string {
  const h = createHash('sha256');
  h.update(`name:${name}\u0000description:${description}\u0000rules:${rules}\u0000`);
  for (const dc of datacenters ?? []) h.update(`dc:${dc}\u0000`);
  return h.digest('base64');
}
