// Members that are gone, as every agent lists them until they are reaped (docs/decisions.md#departed-members):
// one row per node of the `member-status` table, written by the servers' liveness reconciler
// (liveness.ts) beside the node's catalog entry: `failed` once its member lease lapsed, `left` once
// it left gracefully (or was forced out). Live members are etcd's leased entries (src/cluster/members.ts);
// /v1/agent/members lists both (memberStatuses).
import { z } from 'zod';
import type { Clock } from '../core/clock.js';
import type { StateStore } from '../state/types.js';
import { CATALOG_NODES } from './model.js';

export const MEMBER_STATUS_TABLE = 'member-status';

/** Serf's member status codes, as /v1/agent/members shows them. */
export const MEMBER_ALIVE = 1;
export const MEMBER_LEAVING = 2;
export const MEMBER_LEFT = 3;
export const MEMBER_FAILED = 4;
export type MemberStatus = typeof MEMBER_ALIVE | typeof MEMBER_LEAVING | typeof MEMBER_LEFT | typeof MEMBER_FAILED;

/** A member as its entry says (the fields of src/cluster/member-entry.ts, which the cluster layer owns). */
export interface MemberFields {
  readonly name: string;
  readonly id: string;
  readonly address: string;
  /** The agent's HTTP port; 0 when no server saw the member alive (its record was rebuilt from the catalog). */
  readonly port: number;
  readonly datacenter: string;
  readonly server: boolean;
  readonly version: string;
  readonly aclsEnabled: boolean;
}

/** A live member: its entry, and whether it said it is leaving. */
export interface LiveMemberFields extends MemberFields {
  readonly leaving?: boolean;
}

/** A member with the status to list it with. */
export interface ListedMember extends MemberFields {
  readonly status: MemberStatus;
}

export interface DepartedMember {
  readonly Status: 'left' | 'failed';
  /** When a server first recorded it so (ms since the epoch, that server's clock): the reap wait starts here. */
  readonly Since: number;
  readonly Member: MemberFields;
}

/** The fields every member record carries; src/cluster/member-entry.ts extends it for live entries. */
export const memberFieldsSchema = z.object({
  name: z.string().min(1),
  id: z.string(),
  address: z.string(),
  port: z.number().int().min(-1).max(65_535),
  datacenter: z.string(),
  server: z.boolean(),
  version: z.string(),
  aclsEnabled: z.boolean(),
}) satisfies z.ZodType<MemberFields>;

export const departedMemberSchema = z.object({
  Status: z.enum(['left', 'failed']),
  Since: z.number().int().nonnegative(),
  Member: memberFieldsSchema,
}) satisfies z.ZodType<DepartedMember>;

/**
 * How long a member that left stays listed: serf's TombstoneTimeout (24 h), which Consul does not
 * make configurable. A failed member stays for reconnect_timeout (72 h by default).
 */
export const LEFT_KEPT_MS = 24 * 3600_000;

/** The departed rows by node name. */
export function departedMembers(store: Pick<StateStore, 'list'>): Map<string, DepartedMember> {
  return new Map(store.list<DepartedMember>(MEMBER_STATUS_TABLE, '').map((row) => [row.key, row.value]));
}

/**
 * Every member to list: the live ones (alive, or leaving until the servers record it left) and, for
 * a name no live entry holds, the departed ones; sorted by name.
 */
export function memberStatuses(
  live: readonly LiveMemberFields[],
  departed: ReadonlyMap<string, DepartedMember>,
): ListedMember[] {
  const listed = new Map<string, ListedMember>();
  for (const [name, row] of departed)
    listed.set(name, { ...row.Member, name, status: row.Status === 'left' ? MEMBER_LEFT : MEMBER_FAILED });
  for (const member of live) {
    const { leaving, ...fields } = member;
    if (leaving === true && departed.get(member.name)?.Status === 'left') continue;
    listed.set(member.name, { ...fields, status: leaving === true ? MEMBER_LEAVING : MEMBER_ALIVE });
  }
  return [...listed.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Resolves once node `name` is no longer in the catalog (a leaving agent waits for the servers to
 * deregister it), or with false after `deadlineMs`.
 */
export function nodeGone(
  store: Pick<StateStore, 'get' | 'watchOnce'>,
  clock: Clock,
  name: string,
  deadlineMs: number,
): Promise<boolean> {
  return new Promise((resolve) => {
    let cancel: () => void = () => undefined;
    const timer = clock.setTimer(deadlineMs, () => {
      cancel();
      resolve(false);
    });
    const check = (): void => {
      if (store.get(CATALOG_NODES, name) !== undefined) {
        cancel = store.watchOnce({ table: CATALOG_NODES, key: name }, check);
        return;
      }
      timer.cancel();
      resolve(true);
    };
    check();
  });
}
