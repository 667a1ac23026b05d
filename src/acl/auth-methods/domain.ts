// Auth methods, binding rules and login as the HTTP layer is handed them, over one store and the
// ACL tokens (a login writes its token through AclTokens).
import type { StateStore } from '../../state/types.js';
import type { AclTokens } from '../tokens.js';
import { AclAuthMethods, type AuthMethodsOptions } from './auth-methods.js';
import { AclBindingRules } from './binding-rules.js';
import { AclLogin } from './login.js';

export interface AuthMethodsDomain {
  readonly methods: AclAuthMethods;
  readonly rules: AclBindingRules;
  readonly login: AclLogin;
}

export function createAuthMethodsDomain(
  store: StateStore,
  tokens: AclTokens,
  options: AuthMethodsOptions & { readonly datacenter: string },
): AuthMethodsDomain {
  const methods = new AclAuthMethods(store, options);
  const rules = new AclBindingRules(store, methods);
  return { methods, rules, login: new AclLogin(store, tokens, methods, rules, options.datacenter) };
}
