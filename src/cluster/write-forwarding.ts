// Client agents write through server agents (docs/decisions.md D25): a client agent's etcd user may
// not write the shared view or KV (docs/cluster-security.md), so every write its HTTP API takes goes,
// with the caller's token, to the servers over the mailbox `<prefix>sign/writes/`. The server that
// claims it runs it as its own HTTP API would (src/http/forward.ts), and answers with the reply and
// its view's index; the client waits for its own view to reach that index (read-your-writes) and
// answers with the server's reply. What a write is and how it runs are the HTTP layer's: this module
// knows the mailbox, the deadline and the index, and treats the write and its reply as opaque JSON.
import { z } from 'zod';
import { agentError, isAgentError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import {
  ask,
  failedAnswer,
  failedAnswerSchema,
  MAILBOX_DEADLINES_MS,
  VIEW_CATCH_UP_MS,
  type FailedAnswer,
  type Mailbox,
  type NoAnswer,
} from '../core/mailbox.js';
import { settledWithin } from '../core/wait.js';

/** Runs a forwarded write on a server and resolves to its reply (the HTTP layer's, sealed to the asker). */
export type WriteRunner = (write: unknown) => Promise<unknown>;

/** Hands a write to a server and resolves to the server's reply, once this agent's view holds the write. */
export type WriteForwarder = (write: unknown) => Promise<unknown>;

/** What a server answers: the reply with the index its view had when the write was done, or why it ran nothing. */
type WriteAnswer = { readonly ok: true; readonly Index: number; readonly Reply: unknown } | FailedAnswer;

// Any client agent may write under `sign/`: an answer is checked before it is used.
const writeAnswerSchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), Index: z.number().int().nonnegative(), Reply: z.unknown() }),
  failedAnswerSchema,
]);

export interface ForwarderOptions {
  /** The mailbox on the root `writes/` (its request may reject STATE_NO_LEADER or STATE_WRITE_OUTCOME_UNKNOWN). */
  readonly mailbox: Mailbox;
  /** Resolves once this agent's view has applied the etcd revision `index`. */
  readonly reached: (index: number) => Promise<void>;
  readonly deadlineMs?: number;
  /** Says at debug which of the ways a write ended 503 (etcd away, no server, no answer, the server's etcd). */
  readonly log?: Logger | undefined;
  /**
   * Whether the member list holds a live server agent. With none, a write fails at once with
   * `No cluster leader`, nothing sent, as a leaf does (connect/ca/remote-signer.ts).
   */
  readonly serverKnown?: (() => boolean) | undefined;
}

/**
 * A client agent's. A write handed to no server (none is a member, or etcd could not take the
 * request) is Consul's `No cluster leader` (503); a write whose answer never came back may have been
 * run by a server that took it, and is said so (docs/decisions.md#write-outcome-unknown).
 */
export function writeForwarder(o: ForwarderOptions): WriteForwarder {
  const deadlineMs = o.deadlineMs ?? MAILBOX_DEADLINES_MS.writes;
  const noAnswer: NoAnswer = {
    unsent: (err) => {
      o.log?.debug({ err }, 'a forwarded write could not be handed to the servers');
      return err instanceof Error ? err : new Error(String(err));
    },
    unanswered: () => {
      // The request was in etcd: a server may have taken it and run the write, its answer lost or late.
      o.log?.debug({ deadlineMs }, 'no server answered a forwarded write within its deadline');
      return agentError('STATE_WRITE_OUTCOME_UNKNOWN');
    },
    malformed: (problem) => agentError('CLUSTER_FORWARD_FAILED', { detail: `not a write answer: ${problem}` }),
    failed: (res) => {
      if (res.kind === 'unavailable') o.log?.debug({ code: res.code }, 'the server could not run a forwarded write');
    },
  };
  return async (write) => {
    if (o.serverKnown?.() === false) {
      o.log?.debug({}, 'no server agent is a member: a forwarded write was not sent');
      throw agentError('STATE_NO_LEADER');
    }
    const res = await ask(o.mailbox, write, deadlineMs, writeAnswerSchema, noAnswer);
    await settledWithin(o.reached(res.Index), VIEW_CATCH_UP_MS);
    return res.Reply;
  };
}

/** A server agent's: runs each write a client forwards, exactly once across the servers (the mailbox's claim). */
export function serveForwardedWrites(mailbox: Mailbox, run: WriteRunner, index: () => number, log: Logger): void {
  mailbox.serve(async (body): Promise<WriteAnswer> => {
    try {
      const reply = await run(body);
      // The view's index once the write is done: a commit to the view is answered once the view shows it.
      return { ok: true, Index: index(), Reply: reply };
    } catch (err) {
      if (!isAgentError(err)) log.warn({ err }, 'running a forwarded write failed');
      return failedAnswer(err, (detail) => agentError('CLUSTER_FORWARD_FAILED', { detail }));
    }
  });
}
