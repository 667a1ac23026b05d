// ACL binding rules without HTTP (docs/decisions.md#auth-methods): Consul's BindingRuleSet (an
// empty ID creates), read, list (`?authmethod`) and delete, with its validation order and texts.
// A rule is checked against its method: the Selector must compile over the method's identity
// fields, and the BindName (or template and BindVars) must come out valid with every variable the
// method projects. Writes share the auth methods' WriteLock.
import { agentError } from '../../core/errors.js';
import { generateId, isUuid } from '../../core/ids.js';
import type { Row, StateStore } from '../../state/types.js';
import { writeRaced } from '../write-lock.js';
import type { AclAuthMethods } from './auth-methods.js';
import { bindingRuleProblem, selectorError } from './binder.js';
import { ACL_BINDING_RULES, BIND_TYPES, type StoredBindingRule } from './model.js';

/** A binding rule write's body, decoded; as in Go, an empty string means "not given". */
export interface BindingRuleInput {
  readonly ID?: string | undefined;
  readonly Description?: string | undefined;
  readonly AuthMethod?: string | undefined;
  readonly Selector?: string | undefined;
  readonly BindType?: string | undefined;
  readonly BindName?: string | undefined;
  /** Undefined when absent or null (Go's nil pointer). */
  readonly BindVars?: { readonly Name?: string | undefined } | undefined;
}

function invalid(detail: string): Error {
  return agentError('ACL_BINDING_RULE_INVALID', { detail });
}

export class AclBindingRules {
  constructor(
    private readonly store: StateStore,
    private readonly methods: AclAuthMethods,
  ) {}

  read(id: string): Row<StoredBindingRule> | undefined {
    return this.store.get<StoredBindingRule>(ACL_BINDING_RULES, id);
  }

  /** Sorted by ID; with `authMethod`, only that method's. */
  list(authMethod?: string): Row<StoredBindingRule>[] {
    const rows = this.store.list<StoredBindingRule>(ACL_BINDING_RULES, '');
    return authMethod ? rows.filter((row) => row.value.AuthMethod === authMethod) : rows;
  }

  /** PUT /v1/acl/binding-rule and /v1/acl/binding-rule/:id (the URL's ID already merged in). */
  upsert(input: BindingRuleInput): Promise<Row<StoredBindingRule>> {
    return this.methods.lock.run(async () => {
      let id = input.ID ?? '';
      let authMethod = input.AuthMethod ?? '';
      let ifIndex = 0;
      if (id === '') {
        id = this.freshId();
      } else {
        if (!isUuid(id)) throw agentError('ACL_BINDING_RULE_ID_NOT_UUID');
        const existing = this.read(id);
        if (existing === undefined) throw agentError('ACL_BINDING_RULE_NOT_FOUND', { id });
        if (authMethod === '') authMethod = existing.value.AuthMethod;
        else if (authMethod !== existing.value.AuthMethod) throw agentError('ACL_BINDING_RULE_METHOD_IMMUTABLE');
        ifIndex = existing.modifyIndex;
      }
      if (authMethod === '') throw invalid('no AuthMethod is set');
      const method = this.methods.read(authMethod);
      if (method === undefined) throw agentError('ACL_BINDING_RULE_NO_METHOD', { name: authMethod });
      const blank = this.methods.validator(method).newIdentity();
      const selector = input.Selector ?? '';
      if (selector !== '') {
        const problem = selectorError(selector);
        if (problem !== undefined) throw agentError('ACL_BINDING_RULE_SELECTOR', { detail: problem });
      }
      const bindType = input.BindType ?? '';
      const bindName = input.BindName ?? '';
      if (bindType === '') throw invalid('no BindType is set');
      if (bindName === '') throw invalid('no BindName is set');
      if (!(BIND_TYPES as readonly string[]).includes(bindType))
        throw invalid(`unknown BindType ${JSON.stringify(bindType)}`);
      const rule: StoredBindingRule = {
        ID: id,
        Description: input.Description ?? '',
        AuthMethod: authMethod,
        Selector: selector,
        BindType: bindType,
        BindName: bindName,
        ...(input.BindVars === undefined ? {} : { BindVars: { Name: input.BindVars.Name ?? '' } }),
      };
      const problem = bindingRuleProblem(rule, Object.keys(blank.projected));
      if (problem !== undefined) throw invalid(`invalid BindName: ${problem}`);
      const result = await this.store.commit([{ op: 'set', table: ACL_BINDING_RULES, key: id, value: rule, ifIndex }]);
      if (!result.ok) throw writeRaced();
      const row = this.read(id);
      if (row === undefined) throw writeRaced();
      return row;
    });
  }

  /** DELETE /v1/acl/binding-rule/:id; a missing one is no error, as in Consul. */
  delete(id: string): Promise<void> {
    return this.methods.lock.run(async () => {
      const row = this.read(id);
      if (row === undefined) return;
      const result = await this.store.commit([
        { op: 'delete', table: ACL_BINDING_RULES, key: id, ifIndex: row.modifyIndex },
      ]);
      if (!result.ok) throw writeRaced();
    });
  }

  private freshId(): string {
    for (;;) {
      const id = generateId();
      if (this.read(id) === undefined) return id;
    }
  }
}
