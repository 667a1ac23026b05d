// Sessions and KV locks as stored (Consul's structs.Session and the lock half of a DirEntry;
// docs/decisions.md#sessions). A session is a row of the sessions table, with the lease it goes
// with when it has a TTL; a lock is a row of the kv-locks table keyed by the KV key it guards, apart
// from the entry's value, so a plain PUT keeps the lock as Consul's does and a lock's state is in
// every agent's view (the cluster's KV itself is read through).
import { z } from 'zod';
import { agentError } from '../core/errors.js';
import { durationError, formatDuration, parseDuration } from '../core/duration.js';

export const SESSIONS_TABLE = 'sessions';
export const KV_LOCKS_TABLE = 'kv-locks';

export type SessionBehavior = 'release' | 'delete';

/** Consul's bounds on a session TTL (SessionTTLMin, SessionTTLMax) and its default lock-delay. */
export const SESSION_TTL_MIN_MS = 10_000;
export const SESSION_TTL_MAX_MS = 24 * 3_600_000;
export const DEFAULT_LOCK_DELAY_MS = 15_000;
/** The most a session's lock-delay may be (Consul's MaxLockDelay). */
export const MAX_LOCK_DELAY_MS = 60_000;

export interface ServiceCheckRef {
  readonly ID: string;
  readonly Namespace: string;
}

export interface StoredSession {
  readonly ID: string;
  readonly Name: string;
  readonly Node: string;
  /** Nanoseconds, as Consul's JSON shows a time.Duration. */
  readonly LockDelay: number;
  readonly Behavior: SessionBehavior;
  /** Go duration text ('30s'), '' for none. */
  readonly TTL: string;
  readonly NodeChecks: readonly string[];
  readonly ServiceChecks: readonly ServiceCheckRef[] | null;
  /** The lease the row goes with (a TTL session), as the backend names it. */
  readonly lease?: string | undefined;
}

export const storedSessionSchema = z.object({
  ID: z.string().uuid(),
  Name: z.string(),
  Node: z.string().min(1),
  LockDelay: z.number().int().nonnegative(),
  Behavior: z.enum(['release', 'delete']),
  TTL: z.string(),
  NodeChecks: z.array(z.string()),
  ServiceChecks: z.array(z.object({ ID: z.string(), Namespace: z.string() })).nullable(),
  lease: z.string().optional(),
}) satisfies z.ZodType<StoredSession>;

/** A KV key's lock: who holds it, how often it was taken, and what its holder's end does to it. */
export interface StoredLock {
  /** The holder; absent while the key is free. */
  readonly Session?: string | undefined;
  /** Times the key was acquired (Consul's LockIndex), kept across releases. */
  readonly LockIndex: number;
  /** The holder's behavior and lock-delay, kept here: the session's row is gone when they apply. */
  readonly Behavior?: SessionBehavior | undefined;
  readonly LockDelayMs?: number | undefined;
  /** Clock time (ms) before which no session may take the key (set when its holder's session ended). */
  readonly DelayUntil?: number | undefined;
}

export const storedLockSchema = z.object({
  Session: z.string().uuid().optional(),
  LockIndex: z.number().int().nonnegative(),
  Behavior: z.enum(['release', 'delete']).optional(),
  LockDelayMs: z.number().int().nonnegative().optional(),
  DelayUntil: z.number().int().nonnegative().optional(),
}) satisfies z.ZodType<StoredLock>;

/** What a create asks for, fields absent when the body left them out. */
export interface SessionInput {
  readonly Name?: string | undefined;
  readonly Node?: string | undefined;
  /** Set when the body named Checks or NodeChecks (even empty): the serfHealth default then goes. */
  readonly NodeChecks?: readonly string[] | undefined;
  readonly ServiceChecks?: readonly ServiceCheckRef[] | undefined;
  readonly LockDelayMs?: number | undefined;
  readonly Behavior?: string | undefined;
  readonly TTL?: string | undefined;
}

/** A session as create makes it from `input` (Consul's defaults), checked as Session.Apply checks it. */
export function newSession(
  input: SessionInput,
  id: string,
  defaults: { node: string; nodeCheck: string },
): StoredSession {
  const behavior = input.Behavior === undefined || input.Behavior === '' ? 'release' : input.Behavior;
  if (behavior !== 'release' && behavior !== 'delete') {
    throw agentError('SESSION_INVALID', { detail: `Invalid Behavior setting '${behavior}'` });
  }
  const ttl = input.TTL ?? '';
  if (ttl !== '') {
    const ms = parseDuration(ttl);
    if (ms === undefined)
      throw agentError('SESSION_INVALID', { detail: `Session TTL '${ttl}' invalid: ${durationError(ttl)}` });
    if (ms !== 0 && (ms < SESSION_TTL_MIN_MS || ms > SESSION_TTL_MAX_MS)) {
      throw agentError('SESSION_INVALID', {
        detail: `Invalid Session TTL '${Math.round(ms * 1e6)}', must be between [${formatDuration(SESSION_TTL_MIN_MS)}=${formatDuration(SESSION_TTL_MAX_MS)}]`,
      });
    }
  }
  const lockDelayMs = Math.min(input.LockDelayMs ?? DEFAULT_LOCK_DELAY_MS, MAX_LOCK_DELAY_MS);
  if (lockDelayMs < 0) throw agentError('SESSION_INVALID', { detail: 'LockDelay must not be negative' });
  return {
    ID: id,
    Name: input.Name ?? '',
    Node: input.Node === undefined || input.Node === '' ? defaults.node : input.Node,
    LockDelay: Math.round(lockDelayMs * 1e6),
    Behavior: behavior,
    TTL: ttl,
    NodeChecks: [...new Set(input.NodeChecks ?? [defaults.nodeCheck])],
    ServiceChecks:
      input.ServiceChecks === undefined || input.ServiceChecks.length === 0 ? null : [...input.ServiceChecks],
  };
}

/** The session's TTL in ms; 0 for none. */
export function ttlMs(session: StoredSession): number {
  return session.TTL === '' ? 0 : (parseDuration(session.TTL) ?? 0);
}

export function lockDelayMs(session: StoredSession): number {
  return Math.round(session.LockDelay / 1e6);
}

/**
 * Consul's lock-delay input: a number of nanoseconds, or a duration text; either below 1000 is
 * taken as seconds (users write 15 meaning 15 s). Undefined when `value` is neither.
 */
export function lockDelayInput(value: number | string): number | undefined {
  const ns = typeof value === 'number' ? value : (parseDuration(value) ?? NaN) * 1e6;
  if (!Number.isFinite(ns)) return undefined;
  return ns < 1000 ? ns * 1000 : ns / 1e6;
}

/** A session as Consul's API shows it. */
export interface SessionJson extends Omit<StoredSession, 'lease'> {
  readonly CreateIndex: number;
  readonly ModifyIndex: number;
}

export function sessionJson(row: { value: StoredSession; createIndex: number; modifyIndex: number }): SessionJson {
  const s = row.value;
  return {
    ID: s.ID,
    Name: s.Name,
    Node: s.Node,
    LockDelay: s.LockDelay,
    Behavior: s.Behavior,
    TTL: s.TTL,
    NodeChecks: s.NodeChecks,
    ServiceChecks: s.ServiceChecks,
    CreateIndex: row.createIndex,
    ModifyIndex: row.modifyIndex,
  };
}
