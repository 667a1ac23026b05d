// Consul's `addresses.http` and `addresses.https` bind one API elsewhere than `client_addr`;
// svc-agent binds both on `client_addr`. Ignoring such a setting could serve an API on an
// address the file keeps it off (`client_addr = "0.0.0.0"` with `addresses { http = "127.0.0.1" }`
// is Consul's way to keep plain HTTP local), so it is refused unless it names client_addr itself.
import { getPath, type PlainObject } from './object.js';
import type { ConfigValues } from './schema.js';

export function apiAddressProblems(merged: PlainObject, values: ConfigValues): string[] {
  const problems: string[] = [];
  for (const api of ['http', 'https'] as const) {
    const address = getPath(merged, ['addresses', api]);
    if (address === undefined || address === values.client_addr || values.ports[api] === -1) continue;
    problems.push(
      `addresses.${api}: svc-agent serves its HTTP and HTTPS APIs on client_addr (${values.client_addr}) only; ` +
        `set client_addr to ${JSON.stringify(address)} or remove addresses.${api}`,
    );
  }
  return problems;
}
