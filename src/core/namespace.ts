// Namespace names and resolution (docs/decisions.md D2: real namespaces, where Consul's
// open-source build knows only "default"). Consul Enterprise names namespaces like DNS labels:
// letters, digits and '-', at most 64 characters, starting and ending with a letter or digit.
// `*` is a wildcard in intentions only.

export const DEFAULT_NAMESPACE = 'default';

const NAMESPACE_NAME = /^[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,62}[a-zA-Z0-9])?$/;

export function isValidNamespace(name: string): boolean {
  return NAMESPACE_NAME.test(name);
}

/**
 * Where a request's namespace can come from, in the order they are tried. A step an endpoint
 * does not have is left out (no body, or no token to fall back on); an empty string counts as
 * absent, as an empty `?ns=` does in Consul.
 */
export interface NamespaceSources {
  /** The request body's `Namespace`. */
  readonly body?: string | undefined;
  /** `?ns`. */
  readonly query?: string | undefined;
  /** `X-Svc-Namespace` (or `X-Consul-Namespace`). */
  readonly header?: string | undefined;
  /** The namespace of the caller's token. */
  readonly token?: string | undefined;
}

/** The steps a transport's request carries beside its body (HTTP: `?ns` and the header). */
export type RequestNamespaces = Pick<NamespaceSources, 'query' | 'header'>;

/**
 * The first source present (body, `?ns`, header, token), else `fallback`: DEFAULT_NAMESPACE for
 * the five-step resolution of docs/decisions.md D2; an endpoint may fall back to something else
 * (`*` for "every namespace", or undefined for "none asked for").
 */
export function resolveNamespace<F extends string | undefined>(sources: NamespaceSources, fallback: F): string | F {
  return sources.body || sources.query || sources.header || sources.token || fallback;
}
