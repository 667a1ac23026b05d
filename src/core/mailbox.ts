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
