// The mailbox's one failure envelope: a server's error becomes data and the asker's error again,
// code and message as raised; an answer read from etcd is checked against the catalogue. And the
// asker's one flow (ask): each way of getting no answer raises what the asking kind calls it.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { agentError, isAgentError } from '../../../src/core/errors.js';
import {
  answerError,
  ask,
  failedAnswer,
  failedAnswerSchema,
  type FailedAnswer,
  type Mailbox,
  type NoAnswer,
} from '../../../src/core/mailbox.js';

describe('the mailbox failure envelope', () => {
  it('carries an AgentError as raised, and gives it back to the asker', () => {
    const raised = agentError('STATE_NO_LEADER');
    const answer = failedAnswer(raised, (detail) => agentError('CA_SIGN_FAILED', { detail }));
    expect(answer).toEqual({ ok: false, code: 'STATE_NO_LEADER', kind: raised.kind, message: raised.message });
    const again = answerError(failedAnswerSchema.parse(JSON.parse(JSON.stringify(answer))));
    expect(isAgentError(again) && again.code).toBe('STATE_NO_LEADER');
    expect(again.message).toBe(raised.message);
  });

  it('gives anything else the fallback code with its message as the detail', () => {
    const answer = failedAnswer(new Error('disk gone'), (detail) => agentError('ACL_NO_SERVER', { detail }));
    expect(answer).toMatchObject({ ok: false, code: 'ACL_NO_SERVER', kind: 'unavailable' });
    expect(answer.message).toBe('No server agent answered for token secrets: disk gone');
  });

  it('refuses an answer whose code is not in the catalogue, or that is not a failure', () => {
    expect(failedAnswerSchema.safeParse({ ok: false, code: 'NOPE', kind: 'internal', message: 'x' }).success).toBe(
      false,
    );
    expect(failedAnswerSchema.safeParse({ ok: true }).success).toBe(false);
  });
});

/** A mailbox whose one server answers `answer` (a function of the request), or that cannot send. */
function answering(answer: (body: unknown, deadlineMs: number) => Promise<unknown>): Mailbox {
  return { request: answer, serve: () => {} };
}

const echoSchema = z.discriminatedUnion('ok', [
  z.object({ ok: z.literal(true), Echo: z.string() }),
  failedAnswerSchema,
]);

function noAnswer(failures: FailedAnswer[] = []): NoAnswer {
  return {
    unsent: (err) => agentError('CA_NO_SERVER', { detail: `unsent: ${(err as Error).message}` }),
    unanswered: (ms) => agentError('CA_NO_SERVER', { detail: `no answer within ${ms} ms` }),
    malformed: (problem) => agentError('CA_SIGN_FAILED', { detail: problem }),
    failed: (answer) => void failures.push(answer),
  };
}

const codeOf = (err: unknown): string | undefined => (isAgentError(err) ? err.code : undefined);

describe('asking over the mailbox', () => {
  it("resolves to a server's ok answer, the request and deadline handed over as given", async () => {
    const seen: unknown[] = [];
    const mailbox = answering((body, ms) => {
      seen.push(body, ms);
      return Promise.resolve({ ok: true, Echo: (body as { Say: string }).Say });
    });
    await expect(ask(mailbox, { Say: 'hi' }, 1_234, echoSchema, noAnswer())).resolves.toEqual({ ok: true, Echo: 'hi' });
    expect(seen).toEqual([{ Say: 'hi' }, 1_234]);
  });

  it("raises each way of getting no answer in the kind's own words", async () => {
    const unsent = ask(
      answering(() => Promise.reject(new Error('etcd gone'))),
      {},
      50,
      echoSchema,
      noAnswer(),
    );
    await expect(unsent).rejects.toThrow('unsent: etcd gone');
    const late = ask(
      answering(() => Promise.resolve(undefined)),
      {},
      50,
      echoSchema,
      noAnswer(),
    );
    await expect(late).rejects.toThrow('no answer within 50 ms');
    const odd = ask(
      answering(() => Promise.resolve({ ok: true, Echo: 7 })),
      {},
      50,
      echoSchema,
      noAnswer(),
    );
    await expect(odd).rejects.toSatisfy((err) => codeOf(err) === 'CA_SIGN_FAILED' && String(err).includes('Echo'));
  });

  it("raises a server's failure as the catalogue's error, telling the kind first", async () => {
    const failure = failedAnswer(agentError('STATE_NO_LEADER'), (detail) => agentError('CA_SIGN_FAILED', { detail }));
    const told: FailedAnswer[] = [];
    const asked = ask(
      answering(() => Promise.resolve(failure)),
      {},
      50,
      echoSchema,
      noAnswer(told),
    );
    await expect(asked).rejects.toSatisfy((err) => codeOf(err) === 'STATE_NO_LEADER');
    expect(told).toEqual([failure]);
  });
});
