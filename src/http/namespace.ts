// The namespace steps an HTTP request carries beside its body: `?ns`, then the namespace header
// (X-Svc-Namespace, else X-Consul-Namespace). The order of all the steps is core/namespace.ts's.
import type { RequestNamespaces } from '../core/namespace.js';
import type { ApiRequest } from './request.js';

export function requestNamespaces(req: ApiRequest): RequestNamespaces {
  return { query: req.query.get('ns'), header: req.head.namespaceHeader };
}
