// The namespace steps an HTTP request carries beside its body: `?ns`, then the namespace header
// (X-Svc-Namespace, else X-Consul-Namespace). The order of all the steps is core/namespace.ts's.
import { resolveNamespace, type RequestNamespaces } from '../core/namespace.js';
import type { ApiRequest } from './request.js';

export function requestNamespaces(req: ApiRequest): RequestNamespaces {
  return { query: req.query.get('ns'), header: req.head.namespaceHeader };
}

/**
 * The namespace of a request without a body step: `?ns`, the header, then `token` (when the
 * endpoint has that step), else `fallback`. Every call passes the sources in one shape, so the
 * resolution stays monomorphic on the hot leaf and authorize paths (bench/sizing/ca.ts).
 */
export function requestNamespace<F extends string | undefined>(
  req: ApiRequest,
  token: string | undefined,
  fallback: F,
): string | F {
  return resolveNamespace(
    { body: undefined, query: req.query.get('ns'), header: req.head.namespaceHeader, token },
    fallback,
  );
}
