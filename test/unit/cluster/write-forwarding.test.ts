// A client agent's forwarded write (docs/decisions.md D25) and what its 503s say
// (docs/decisions.md#write-outcome-unknown): a write handed to no server is `No cluster leader`,
// nothing sent; a write whose answer never came back may have been run by a server that took it.
import { describe, expect, it } from 'vitest';
import { writeForwarder } from '../../../src/cluster/write-forwarding.js';
import type { Mailbox } from '../../../src/core/mailbox.js';
import { agentError } from '../../../src/core/errors.js';

/** A mailbox answering every request with `answer`, each request counted. */
function mailbox(answer: () => Promise<unknown>): Mailbox & { asked: number } {
  const box = {
    asked: 0,
    request: () => {
      box.asked++;
      return answer();
    },
    serve: () => {},
  };
  return box;
}

const reached = (): Promise<void> => Promise.resolve();

describe('writeForwarder', () => {
  it('answers a write whose answer never came back as of unknown outcome, not No cluster leader', async () => {
    const box = mailbox(() => Promise.resolve(undefined));
    const forward = writeForwarder({ mailbox: box, reached, serverKnown: () => true });
    await expect(forward({ Method: 'PUT' })).rejects.toMatchObject({
      code: 'STATE_WRITE_OUTCOME_UNKNOWN',
      kind: 'unavailable',
      message: expect.stringContaining('may have been applied'),
    });
    expect(box.asked).toBe(1);
  });

  it('fails at once with No cluster leader, asking nobody, when no server agent is a member', async () => {
    const box = mailbox(() => Promise.resolve(undefined));
    const forward = writeForwarder({ mailbox: box, reached, serverKnown: () => false });
    await expect(forward({ Method: 'PUT' })).rejects.toMatchObject({
      code: 'STATE_NO_LEADER',
      message: 'No cluster leader',
    });
    expect(box.asked).toBe(0);
  });

  it("passes on what etcd said of the request's own write, and a server's answer", async () => {
    for (const code of ['STATE_NO_LEADER', 'STATE_WRITE_OUTCOME_UNKNOWN'] as const) {
      const forward = writeForwarder({ mailbox: mailbox(() => Promise.reject(agentError(code))), reached });
      await expect(forward({ Method: 'PUT' })).rejects.toMatchObject({ code });
    }
    const answered = writeForwarder({
      mailbox: mailbox(() => Promise.resolve({ ok: true, Index: 9, Reply: 'sealed' })),
      reached,
    });
    expect(await answered({ Method: 'PUT' })).toBe('sealed');
  });
});
