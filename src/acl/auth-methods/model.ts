// ACL auth methods and binding rules as the state store keeps them (docs/decisions.md#auth-methods):
// their rows, the rows' schemas (checked wherever the store is shared), and their API shapes in
// Consul's key order. An auth method is keyed by its name, a binding rule by its ID.
import { z } from 'zod';
import { formatDuration } from '../../core/duration.js';
import type { Row } from '../../state/types.js';

export const ACL_AUTH_METHODS = 'acl-auth-methods';
export const ACL_BINDING_RULES = 'acl-binding-rules';

/** The one type this agent registers (Consul's `jwt`, from its ssoauth package). */
export const AUTH_METHOD_TYPES = ['jwt'] as const;

export interface StoredAuthMethod {
  readonly Name: string;
  readonly Type: string;
  readonly DisplayName: string;
  readonly Description: string;
  /** Milliseconds; 0 for none (the token then never expires). */
  readonly MaxTokenTTLMs: number;
  /** '' (local), 'local' or 'global', as the client wrote it. */
  readonly TokenLocality: string;
  /** As the client sent it; validated by the type's config decoder (jwt-config.ts) on every write. */
  readonly Config: Readonly<Record<string, unknown>>;
}

export const BIND_TYPES = ['service', 'node', 'role', 'policy', 'templated-policy'] as const;

export interface StoredBindingRule {
  readonly ID: string;
  readonly Description: string;
  readonly AuthMethod: string;
  readonly Selector: string;
  readonly BindType: string;
  readonly BindName: string;
  /** The templated-policy bind type's variables (Consul 1.17's BindVars); absent when not given. */
  readonly BindVars?: { readonly Name: string };
}

export const storedAuthMethodSchema = z.object({
  Name: z.string(),
  Type: z.string(),
  DisplayName: z.string(),
  Description: z.string(),
  MaxTokenTTLMs: z.number().int().nonnegative(),
  TokenLocality: z.string(),
  Config: z.record(z.string(), z.unknown()),
}) satisfies z.ZodType<StoredAuthMethod>;

export const storedBindingRuleSchema = z.object({
  ID: z.string(),
  Description: z.string(),
  AuthMethod: z.string(),
  Selector: z.string(),
  BindType: z.string(),
  BindName: z.string(),
  BindVars: z.object({ Name: z.string() }).exactOptional(),
}) satisfies z.ZodType<StoredBindingRule>;

/**
 * GET /v1/acl/auth-method/:name and every write's answer: Consul's MarshalJSON puts MaxTokenTTL
 * (a Go duration string, left out when 0) before the struct's own fields.
 */
export function authMethodJson(row: Row<StoredAuthMethod>): Record<string, unknown> {
  const m = row.value;
  const out = authMethodHead(m);
  out.Config = m.Config;
  out.CreateIndex = row.createIndex;
  out.ModifyIndex = row.modifyIndex;
  return out;
}

/** One entry of GET /v1/acl/auth-methods (Consul's ACLAuthMethodListStub): no Config. */
export function authMethodStubJson(row: Row<StoredAuthMethod>): Record<string, unknown> {
  const out = authMethodHead(row.value);
  out.CreateIndex = row.createIndex;
  out.ModifyIndex = row.modifyIndex;
  return out;
}

function authMethodHead(m: StoredAuthMethod): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (m.MaxTokenTTLMs > 0) out.MaxTokenTTL = formatDuration(m.MaxTokenTTLMs);
  out.Name = m.Name;
  out.Type = m.Type;
  if (m.DisplayName !== '') out.DisplayName = m.DisplayName;
  if (m.Description !== '') out.Description = m.Description;
  if (m.TokenLocality !== '') out.TokenLocality = m.TokenLocality;
  return out;
}

/** Consul's ACLBindingRule: BindVars only when set (omitempty). */
export function bindingRuleJson(row: Row<StoredBindingRule>): Record<string, unknown> {
  const r = row.value;
  const out: Record<string, unknown> = {
    ID: r.ID,
    Description: r.Description,
    AuthMethod: r.AuthMethod,
    Selector: r.Selector,
    BindType: r.BindType,
    BindName: r.BindName,
  };
  if (r.BindVars !== undefined) out.BindVars = r.BindVars.Name === '' ? {} : { Name: r.BindVars.Name };
  out.CreateIndex = row.createIndex;
  out.ModifyIndex = row.modifyIndex;
  return out;
}
