// The ACL vocabulary shared by the rule engine, the token resolver and the HTTP layer's
// route-declared enforcement (docs/decisions.md#acl-error-texts, #acl-rules).

export const RESOURCES = [
  'acl',
  'agent',
  'event',
  'intention',
  'key',
  'keyring',
  'node',
  'operator',
  'mesh',
  'peering',
  'query',
  'service',
  'session',
] as const;
export type Resource = (typeof RESOURCES)[number];

/** What a request needs. `list` exists for keys only. */
export type Access = 'read' | 'list' | 'write';

/** What a rule grants; across a token's policies the stronger wins: deny > write > list > read. */
export type PolicyLevel = 'deny' | 'read' | 'list' | 'write';

export interface Authorizer {
  /**
   * May the token act at `access` on `resource`? Named resources (key, service, node, agent,
   * session, event, query, intention) take the name; scalars ignore it. `intention` is judged by
   * the `intentions` attribute of service rules.
   */
  allowed(resource: Resource, access: Access, name?: string): boolean;
  /** A recursive KV delete: write on the longest matching prefix and no rule beneath it lacks write. */
  keyWritePrefix(prefix: string): boolean;
  /** Some rule of the resource grants `access` (a `*` read of intentions, say). */
  anyAllowed(resource: Resource, access: Access): boolean;
  /** Every rule of the resource grants `access`, and so does the fall-through (a `*` write). */
  allAllowed(resource: Resource, access: Access): boolean;
  /** The fall-through decision: allow when ACLs are off or the default policy is allow. */
  readonly defaultAllow: boolean;
}
