// Namespace names (decision D2: real namespaces, where Consul's open-source build knows only
// "default"). Consul Enterprise names namespaces like DNS labels: letters, digits and '-', at most
// 64 characters, starting and ending with a letter or digit. `*` is a wildcard in intentions only.

export const DEFAULT_NAMESPACE = 'default';

const NAMESPACE_NAME = /^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,62}[a-zA-Z0-9])?$/;

export function isValidNamespace(name: string): boolean {
  return NAMESPACE_NAME.test(name);
}

/** The 400 text for a namespace name that is not valid. */
export function invalidNamespaceMessage(name: string): string {
  return `Invalid Namespace ${JSON.stringify(name)}: a namespace name is 1 to 64 letters, digits or '-', starting and ending with a letter or digit`;
}
