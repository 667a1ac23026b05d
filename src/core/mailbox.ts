// The request/answer mailbox between cluster agents, as its three users see it (client agents ask,
// server agents answer: leaf signing in connect/ca/remote-signer.ts, token secrets in
// acl/cluster-secrets.ts, forwarded writes in cluster/write-forwarding.ts; the etcd transport is
// state/etcd/etcd-mailbox.ts, docs/cluster-security.md). Declared once here: the port each
// is handed, and the answer a server gives when it ran nothing, with its one mapping to and from
// the error catalogue. Anything a server answers is read from etcd, where any agent may write:
// an answer is checked (failedAnswerSchema) before it is used.
import { z } from 'zod';
import { ERROR_CATALOGUE } from './error-catalogue.js';
import { AgentError, isAgentError, type ErrorCode, type ErrorKind } from './errors.js';

export interface Mailbox {
  /**
   * Writes a request and waits for a server's answer. Resolves undefined when no server answered
   * within `deadlineMs`; rejects with the catalogue's error when the request could not be sent.
   */
  request(body: unknown, deadlineMs: number): Promise<unknown>;
  /** Answers every request with `handler`'s result (a server's). */
  serve(handler: (body: unknown) => Promise<unknown>): void;
}

/**
 * How long one side waits for its view to reach what the other side's message says it holds (the
 * row a client committed, the roots it has, the write a server ran): both watch the same etcd, so
 * this is a watch event's delay; past it the side goes on with what it has.
 */
export const VIEW_CATCH_UP_MS = 2_000;

/** A server's answer to a request it could not run: the catalogue's error, as data. */
export interface FailedAnswer {
  readonly ok: false;
  readonly code: ErrorCode;
  readonly kind: ErrorKind;
  readonly message: string;
}

export const failedAnswerSchema = z.object({
  ok: z.literal(false),
  code: z
    .string()
    .refine((code) => Object.hasOwn(ERROR_CATALOGUE, code), 'not an error code') as unknown as z.ZodType<ErrorCode>,
  kind: z.string() as unknown as z.ZodType<ErrorKind>,
  message: z.string(),
}) satisfies z.ZodType<FailedAnswer>;

/** A server's failure as its answer: an AgentError as raised, anything else as `otherwise` (its message given). */
export function failedAnswer(err: unknown, otherwise: (message: string) => AgentError): FailedAnswer {
  const failed = isAgentError(err) ? err : otherwise(err instanceof Error ? err.message : String(err));
  return { ok: false, code: failed.code, kind: failed.kind, message: failed.message };
}

/** The asker's error for a failed answer: the server's, code and message as it raised them. */
export function answerError(answer: FailedAnswer): AgentError {
  return new AgentError(answer.code, answer.message);
}

/** What the mailbox carries: leaves to sign, token secrets to keep or show, client agents' writes. */
export type MailboxKind = 'sign' | 'acl' | 'writes';

/** How long an asker waits for a server's answer once its request is in etcd, per kind. */
export const MAILBOX_DEADLINES_MS: Readonly<Record<MailboxKind, number>> = {
  // Consul's `limits.rpc_client_timeout`, how long its client agents wait on a server's RPC. A wave of
  // first leaves waits on busy servers: 3 agents x 300 had a client's tail at 6 s on a 2-core machine
  // at rest and past 15 s (the deadline before) with the test suite beside it.
  sign: 60_000,
  // Well inside an HTTP client's patience: a token write through a client waits this long at most.
  acl: 5_000,
  // A server's commit that waits out an etcd election (7 s at most, Consul's RPC hold time,
  // docs/decisions.md#one-member-down) plus the claim and the answer around it.
  writes: 9_000,
};

/** What each way of getting no answer raises, in the asking kind's own words. */
export interface NoAnswer {
  /** etcd could not take the request (the transport's rejection). */
  unsent(err: unknown): Error;
  /** No server answered within `deadlineMs`: the request was in etcd, and a server may have taken it. */
  unanswered(deadlineMs: number): Error;
  /** The answer is none of the kind's (anything a server answers is read from etcd, where any agent may write). */
  malformed(problem: string): Error;
  /** Told of a server's failure before it is raised. */
  failed?(answer: FailedAnswer): void;
}

/**
 * One request over `mailbox`, its answer waited for until `deadlineMs`, checked with `read`, and a
 * server's failure raised as the catalogue's error: resolves to the server's `ok` answer.
 */
export async function ask<A extends { readonly ok: true } | FailedAnswer>(
  mailbox: Mailbox,
  request: unknown,
  deadlineMs: number,
  read: z.ZodType<A>,
  noAnswer: NoAnswer,
): Promise<Exclude<A, FailedAnswer>> {
  let answer: unknown;
  try {
    answer = await mailbox.request(request, deadlineMs);
  } catch (err) {
    throw noAnswer.unsent(err);
  }
  if (answer === undefined) throw noAnswer.unanswered(deadlineMs);
  const checked = read.safeParse(answer);
  if (!checked.success) throw noAnswer.malformed(problemOf(checked.error));
  const res: { readonly ok: true } | FailedAnswer = checked.data;
  if (!res.ok) {
    noAnswer.failed?.(res);
    throw answerError(res);
  }
  return checked.data as Exclude<A, FailedAnswer>;
}

/** Why a message is malformed, for its error text: the first problem's path and message. */
export function problemOf(error: z.ZodError): string {
  const issue = error.issues[0];
  return `${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`;
}
