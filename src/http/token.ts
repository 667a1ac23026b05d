// Which ACL token a request carries, in Consul's order (docs/decisions.md#token-order): `?token=`,
// then `X-Svc-Token` (or `X-Consul-Token`), then `Authorization: Bearer`, then the agent's default
// token, then the anonymous token.
import { ANONYMOUS_SECRET } from '../acl/builtin.js';
import type { ApiRequest } from './request.js';

/** The token the client sent, or undefined when it sent none. */
export function requestToken(req: ApiRequest): string | undefined {
  // The fast path skips parsing when `token=` cannot be present; a key may be percent-encoded.
  const raw = req.head.rawQuery;
  if (raw !== '' && (raw.includes('token=') || raw.includes('%'))) {
    const fromQuery = req.query.get('token');
    if (fromQuery) return fromQuery;
  }
  if (req.head.tokenHeader !== '') return req.head.tokenHeader;
  return bearerToken(req.head.authorization);
}

/** The secret a request acts with: its own token, else the default token, else anonymous. */
export function effectiveToken(req: ApiRequest, defaultToken: string | undefined): string {
  return requestToken(req) ?? (defaultToken || ANONYMOUS_SECRET);
}

export function bearerToken(authorization: string): string | undefined {
  if (authorization === '') return undefined;
  const parts = authorization.trim().split(/\s+/);
  if (parts.length < 2 || parts[0]?.toLowerCase() !== 'bearer') return undefined;
  return parts[1] || undefined;
}
