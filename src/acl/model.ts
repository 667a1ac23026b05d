// ACL tokens, policies and roles as the state store keeps them (docs/decisions.md#acl-api,
// #acl-roles). Tokens and roles store link IDs only; names are filled in on read, and links to
// deleted policies or roles drop out. Policies store their parsed rules beside the text, so a
// policy is parsed once (when written) and compiled synchronously afterwards.
import { z } from 'zod';
import type { NodeIdentity, ServiceIdentity } from './rules/identities.js';
import type { ParsedRules } from './rules/parse.js';
import { BLOCK_RULES, SCALAR_RULES } from './rules/model.js';

export const ACL_TOKENS = 'acl-tokens';
export const ACL_POLICIES = 'acl-policies';
export const ACL_ROLES = 'acl-roles';
/** Singletons such as the bootstrap marker. */
export const ACL_META = 'acl-meta';
export const BOOTSTRAP_KEY = 'bootstrap';

export const HIDDEN_SECRET = '<hidden>';

export interface PolicyLink {
  readonly ID: string;
}

/** A token's link to a role, by ID (a role may be renamed). */
export type RoleLink = PolicyLink;

/** A templated policy as a token or role stores it (Consul 1.17's ACLTemplatedPolicy). */
export interface StoredTemplatedPolicy {
  readonly TemplateID: string;
  readonly TemplateName: string;
  /** Absent when the client sent none (a template without variables). */
  readonly TemplateVariables?: { readonly Name: string };
  readonly Datacenters?: readonly string[];
}

/** Declared beside the rules they expand to; a token stores them as they are. */
export type { NodeIdentity, ServiceIdentity } from './rules/identities.js';

export interface StoredToken {
  readonly AccessorID: string;
  /** The secret itself: only on one machine (the embedded store). */
  readonly SecretID?: string;
  /** Its SHA-256 instead, in a cluster's shared view (src/acl/secrets.ts, docs/decisions.md D23). */
  readonly SecretHash?: string;
  readonly Description: string;
  readonly Policies: readonly PolicyLink[];
  readonly ServiceIdentities: readonly ServiceIdentity[];
  readonly NodeIdentities: readonly NodeIdentity[];
  /** Absent on rows written before roles existed, as on tokens that link none. */
  readonly Roles?: readonly RoleLink[];
  readonly TemplatedPolicies?: readonly StoredTemplatedPolicy[];
  readonly Local: boolean;
  /** The auth method whose login made it (src/acl/auth-methods/); absent for every other token. */
  readonly AuthMethod?: string;
  /** RFC 3339; absent for a token that never expires. */
  readonly ExpirationTime?: string;
  readonly CreateTime: string;
  readonly Hash: string;
  readonly Namespace: string;
}

export interface StoredPolicy {
  readonly ID: string;
  readonly Name: string;
  readonly Description: string;
  readonly Rules: string;
  readonly Datacenters: readonly string[] | null;
  readonly Hash: string;
  readonly Parsed: ParsedRules;
}

export interface StoredRole {
  readonly ID: string;
  readonly Name: string;
  readonly Description: string;
  readonly Policies: readonly PolicyLink[];
  readonly ServiceIdentities: readonly ServiceIdentity[];
  readonly NodeIdentities: readonly NodeIdentity[];
  readonly TemplatedPolicies: readonly StoredTemplatedPolicy[];
  readonly Hash: string;
}

// The rows' schemas, checked wherever the store is shared (src/state/etcd/row-check.ts).
const level = z.enum(['deny', 'read', 'list', 'write']);
const namedRule = z.object({ name: z.string(), policy: level, intentions: level.exactOptional() });

const parsedRulesSchema = z.object({
  ...Object.fromEntries(BLOCK_RULES.map((rule) => [rule, z.array(namedRule).exactOptional()])),
  ...Object.fromEntries(SCALAR_RULES.map((rule) => [rule, level.exactOptional()])),
}) as unknown as z.ZodType<ParsedRules>;

const linkSchema = z.object({ ID: z.string() });
const serviceIdentitySchema = z.object({ ServiceName: z.string(), Datacenters: z.array(z.string()).exactOptional() });
const nodeIdentitySchema = z.object({ NodeName: z.string(), Datacenter: z.string() });
const templatedPolicySchema = z.object({
  TemplateID: z.string(),
  TemplateName: z.string(),
  TemplateVariables: z.object({ Name: z.string() }).exactOptional(),
  Datacenters: z.array(z.string()).exactOptional(),
});

export const storedTokenSchema = z
  .object({
    AccessorID: z.string(),
    // One of the two (secrets.ts): the secret on one machine, its hash in a cluster's view.
    SecretID: z.string().exactOptional(),
    SecretHash: z.string().exactOptional(),
    Description: z.string(),
    Policies: z.array(linkSchema),
    ServiceIdentities: z.array(serviceIdentitySchema),
    NodeIdentities: z.array(nodeIdentitySchema),
    Roles: z.array(linkSchema).exactOptional(),
    TemplatedPolicies: z.array(templatedPolicySchema).exactOptional(),
    Local: z.boolean(),
    AuthMethod: z.string().exactOptional(),
    ExpirationTime: z.string().exactOptional(),
    CreateTime: z.string(),
    Hash: z.string(),
    Namespace: z.string(),
  })
  .refine((token) => (token.SecretID === undefined) !== (token.SecretHash === undefined), {
    message: 'a token row holds either SecretID or SecretHash',
  }) satisfies z.ZodType<StoredToken>;

export const storedPolicySchema = z.object({
  ID: z.string(),
  Name: z.string(),
  Description: z.string(),
  Rules: z.string(),
  Datacenters: z.array(z.string()).nullable(),
  Hash: z.string(),
  Parsed: parsedRulesSchema,
}) satisfies z.ZodType<StoredPolicy>;

export const storedRoleSchema = z.object({
  ID: z.string(),
  Name: z.string(),
  Description: z.string(),
  Policies: z.array(linkSchema),
  ServiceIdentities: z.array(serviceIdentitySchema),
  NodeIdentities: z.array(nodeIdentitySchema),
  TemplatedPolicies: z.array(templatedPolicySchema),
  Hash: z.string(),
}) satisfies z.ZodType<StoredRole>;

/** `acl-meta` holds the bootstrap marker only. */
export const aclMetaSchema = { byKey: { [BOOTSTRAP_KEY]: z.object({ AccessorID: z.string() }) } };
