// A member entry as read from etcd (`<prefix>members/<node>`), checked before it is listed: any
// agent with etcd credentials can write there, and one bad entry must not fail /v1/agent/members.
import { z } from 'zod';
import { memberFieldsSchema } from '../catalog/member-status.js';

/** The schema of members.ts's MemberRecord (members.ts assigns what it parses to one). */
const memberEntrySchema = memberFieldsSchema.extend({
  /** Put by an agent that leaves gracefully (PUT /v1/agent/leave, or a graceful stop), just before its entry goes. */
  leaving: z.boolean().exactOptional(),
});

export type MemberEntry = z.infer<typeof memberEntrySchema>;

/** The entry, or why it is not one. */
export function readMemberEntry(stored: Buffer): { ok: true; entry: MemberEntry } | { ok: false; problem: string } {
  let value: unknown;
  try {
    value = JSON.parse(stored.toString('utf8'));
  } catch {
    return { ok: false, problem: 'not JSON' };
  }
  const checked = memberEntrySchema.safeParse(value);
  if (checked.success) return { ok: true, entry: checked.data };
  const issue = checked.error.issues[0];
  return { ok: false, problem: `${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}` };
}
