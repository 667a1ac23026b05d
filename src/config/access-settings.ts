// Consul settings that narrow who reaches the API. svc-agent does not implement them, and ignoring
// one with only a warning would open what the file closes, so each is refused when it restricts:
// - `addresses.http`/`addresses.https` bind one API elsewhere than `client_addr`; svc-agent binds
//   both on `client_addr` (`client_addr = "0.0.0.0"` with `addresses { http = "127.0.0.1" }` is
//   Consul's way to keep plain HTTP local), so they are refused unless they name client_addr itself;
// - `http_config.block_endpoints` and `http_config.allow_write_http_from`, when non-empty.
import { getPath, type PlainObject } from './object.js';
import type { ConfigValues } from './schema.js';

const RESTRICTING_LISTS = {
  block_endpoints: 'block these paths in a proxy in front of the agent, or with ACLs',
  allow_write_http_from: 'allow writes by ACL token instead, or filter addresses in front of the agent',
} as const;

export function accessSettingProblems(merged: PlainObject, values: ConfigValues): string[] {
  const problems: string[] = [];
  for (const api of ['http', 'https'] as const) {
    const address = getPath(merged, ['addresses', api]);
    if (address === undefined || address === values.client_addr || values.ports[api] === -1) continue;
    problems.push(
      `addresses.${api}: svc-agent serves its HTTP and HTTPS APIs on client_addr (${values.client_addr}) only; ` +
        `set client_addr to ${JSON.stringify(address)} or remove addresses.${api}`,
    );
  }
  for (const [key, instead] of Object.entries(RESTRICTING_LISTS)) {
    const list = getPath(merged, ['http_config', key]);
    if (!Array.isArray(list) || list.length === 0) continue;
    problems.push(
      `http_config.${key}: svc-agent does not implement this Consul restriction and will not serve without it; ${instead}`,
    );
  }
  return problems;
}
