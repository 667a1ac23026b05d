// The mailbox's one failure envelope: a server's error becomes data and the asker's error again,
// code and message as raised; an answer read from etcd is checked against the catalogue.
import { describe, expect, it } from 'vitest';
import { agentError, isAgentError } from '../../../src/core/errors.js';
import { answerError, failedAnswer, failedAnswerSchema } from '../../../src/core/mailbox.js';

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
