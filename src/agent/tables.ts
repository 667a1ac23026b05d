// The shared tables as a cluster stores them in etcd: each table's row schema, declared beside its
// row type, so the view checks what it reads and writes; and which tables stay in etcd.
import {
  ACL_META,
  ACL_POLICIES,
  ACL_ROLES,
  ACL_TOKENS,
  aclMetaSchema,
  storedPolicySchema,
  storedRoleSchema,
  storedTokenSchema,
} from '../acl/model.js';
import {
  ACL_AUTH_METHODS,
  ACL_BINDING_RULES,
  storedAuthMethodSchema,
  storedBindingRuleSchema,
} from '../acl/auth-methods/model.js';
import { departedMemberSchema, MEMBER_STATUS_TABLE } from '../catalog/member-status.js';
import { CATALOG_SCHEMAS } from '../catalog/model.js';
import { CONFIG_ENTRIES_TABLE, storedConfigEntrySchema } from '../config-entries/model.js';
import { CA_TABLE, caTableSchema, ROOTS_TABLE, storedRootSchema } from '../connect/ca/model.js';
import { INTENTIONS_TABLE, storedIntentionSchema } from '../connect/intentions/model.js';
import { EVENTS_TABLE, userEventSchema } from '../events/user-event.js';
import { KV_TABLE, storedKvSchema } from '../kv/entries.js';
import { KV_LOCKS_TABLE, SESSIONS_TABLE, storedLockSchema, storedSessionSchema } from '../sessions/model.js';
import type { TableSchema, TableSchemas } from '../state/types.js';

/** KV can be large: in a cluster it stays in etcd and each read goes there (docs/decisions.md D15). */
export const READ_THROUGH_TABLES = [KV_TABLE];

export const TABLE_SCHEMAS: TableSchemas = new Map<string, TableSchema>([
  [KV_TABLE, storedKvSchema],
  [INTENTIONS_TABLE, storedIntentionSchema],
  [ACL_TOKENS, storedTokenSchema],
  [ACL_POLICIES, storedPolicySchema],
  [ACL_ROLES, storedRoleSchema],
  [ACL_META, aclMetaSchema],
  [ACL_AUTH_METHODS, storedAuthMethodSchema],
  [ACL_BINDING_RULES, storedBindingRuleSchema],
  [CA_TABLE, caTableSchema],
  [ROOTS_TABLE, storedRootSchema],
  ...CATALOG_SCHEMAS,
  [MEMBER_STATUS_TABLE, departedMemberSchema],
  [EVENTS_TABLE, userEventSchema],
  [SESSIONS_TABLE, storedSessionSchema],
  [KV_LOCKS_TABLE, storedLockSchema],
  [CONFIG_ENTRIES_TABLE, storedConfigEntrySchema],
]);
