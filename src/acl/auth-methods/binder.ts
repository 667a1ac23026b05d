// Consul's Binder (agent/consul/auth/binder.go): the binding rules whose Selector matches a login's
// identity each bind a service identity, a node identity (in this datacenter), a role or a policy
// by name (skipped when none has the name), or a templated policy; names are interpolated from the
// identity's projected variables. Selectors are go-bexpr over `value.<key>` and `list.<key>`
// (core/bexpr.ts); a selector that does not compile or evaluate matches nothing, as in Consul.
import { compileFilter, type Predicate } from '../../core/bexpr.js';
import { agentError, isAgentError } from '../../core/errors.js';
import { findTemplate, templateVariablesError, type TemplatedPolicyInput } from '../templated.js';
import { interpolate, validBindName } from './bind-name.js';
import type { LoginIdentity } from './claims.js';
import type { StoredBindingRule } from './model.js';

export interface Bindings {
  readonly ServiceIdentities: { ServiceName: string }[];
  readonly NodeIdentities: { NodeName: string; Datacenter: string }[];
  readonly Roles: { ID: string }[];
  readonly Policies: { ID: string }[];
  readonly TemplatedPolicies: TemplatedPolicyInput[];
}

/** What binding needs of the ACL tables: a role's or policy's ID by name. */
export interface BinderLookups {
  readonly roleId: (name: string) => string | undefined;
  readonly policyId: (name: string) => string | undefined;
}

const SELECTABLE = new Set(['value', 'list']);

/** A Selector compiled over the identity's fields; throws FILTER_INVALID with go-bexpr's text. */
export function compileSelector(selector: string): Predicate {
  return compileFilter(selector, SELECTABLE, SELECTABLE);
}

/** The text of a selector's compile error without the filter endpoints' prefix. */
export function selectorError(selector: string): string | undefined {
  try {
    compileSelector(selector);
    return undefined;
  } catch (err) {
    if (!isAgentError(err)) throw err;
    return err.message.replace(/^Failed to create boolean expression evaluator: /, '');
  }
}

function selectorMatches(selector: string, identity: LoginIdentity): boolean {
  if (selector === '') return true;
  try {
    return compileSelector(selector)(identity.selectable);
  } catch {
    return false;
  }
}

/** True when the login would get a token with nothing on it (Consul refuses it before writing). */
export function noBindings(b: Bindings): boolean {
  return (
    b.ServiceIdentities.length === 0 &&
    b.NodeIdentities.length === 0 &&
    b.TemplatedPolicies.length === 0 &&
    b.Roles.length === 0 &&
    b.Policies.length === 0
  );
}

/** The bindings of `rules` for `identity`; throws ACL_LOGIN_REFUSED when a bound name comes out invalid. */
export function bind(
  rules: readonly StoredBindingRule[],
  identity: LoginIdentity,
  lookups: BinderLookups,
  datacenter: string,
): Bindings {
  const out: Bindings = { ServiceIdentities: [], NodeIdentities: [], Roles: [], Policies: [], TemplatedPolicies: [] };
  for (const rule of rules) {
    if (!selectorMatches(rule.Selector, identity)) continue;
    if (rule.BindType === 'templated-policy') {
      const result = templatedBinding(rule, identity.projected);
      if (typeof result === 'string') throw agentError('ACL_LOGIN_REFUSED', { detail: result });
      out.TemplatedPolicies.push(result);
      continue;
    }
    const name = bindName(rule.BindType, rule.BindName, identity.projected);
    if (typeof name !== 'string') throw agentError('ACL_LOGIN_REFUSED', { detail: name.error });
    switch (rule.BindType) {
      case 'service':
        out.ServiceIdentities.push({ ServiceName: name });
        break;
      case 'node':
        out.NodeIdentities.push({ NodeName: name, Datacenter: datacenter });
        break;
      case 'role': {
        const id = lookups.roleId(name);
        if (id !== undefined) out.Roles.push({ ID: id });
        break;
      }
      case 'policy': {
        const id = lookups.policyId(name);
        if (id !== undefined) out.Policies.push({ ID: id });
        break;
      }
    }
  }
  return out;
}

/** Consul's computeBindName: interpolated (lowercased), then the bind type's name rule. */
function bindName(
  bindType: string,
  template: string,
  vars: Readonly<Record<string, string>>,
): string | { readonly error: string } {
  const computed = interpolate(template, vars, true);
  if (typeof computed !== 'string') return { error: `error interpreting template: ${computed.error}` };
  if (!validBindName(bindType, computed)) return { error: `invalid bind name: ${JSON.stringify(computed)}` };
  return computed;
}

/** Consul's generateTemplatedPolicies: the template by BindName, its variables interpolated and validated. */
function templatedBinding(
  rule: StoredBindingRule,
  vars: Readonly<Record<string, string>>,
): TemplatedPolicyInput | string {
  const base = findTemplate(rule.BindName);
  if (base === undefined) {
    return `Bind name for templated-policy bind type does not match existing template name: ${rule.BindName}`;
  }
  let variables: { Name: string } | undefined;
  if (rule.BindVars !== undefined) {
    const name = rule.BindVars.Name === '' ? '' : interpolate(rule.BindVars.Name, vars, true);
    if (typeof name !== 'string') return `failed to interpret templated policy variables: ${name.error}`;
    variables = { Name: name };
  }
  const problem = templateVariablesError(base, variables);
  if (problem !== undefined) return `templated policy failed validation: ${problem}`;
  return { TemplateName: rule.BindName, ...(variables === undefined ? {} : { TemplateVariables: variables }) };
}

/**
 * Consul's IsValidBindingRule when a rule is written: its BindName (or template and BindVars) must
 * come out valid with every projected variable set to "fake". Undefined when it does.
 */
export function bindingRuleProblem(
  rule: Pick<StoredBindingRule, 'BindType' | 'BindName' | 'BindVars'>,
  varNames: readonly string[],
): string | undefined {
  const fake = Object.fromEntries(varNames.map((name) => [name, 'fake']));
  if (rule.BindType === 'templated-policy') {
    const result = templatedBinding({ ...rule, ID: '', Description: '', AuthMethod: '', Selector: '' }, fake);
    return typeof result === 'string' ? `failed to validate bindType "templated-policy": ${result}` : undefined;
  }
  const name = bindName(rule.BindType, rule.BindName, fake);
  return typeof name === 'string'
    ? undefined
    : `failed to validate bindType ${JSON.stringify(rule.BindType)}: ${name.error}`;
}
