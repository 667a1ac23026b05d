// Pipelined writes on a durable agent, over raw sockets: every write is either answered or not
// applied, whichever transport serves (docs/decisions.md#held-writes). A durable write answers
// after its fsync, so uWS meets the request behind it while the write is still pending.
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, storedKeys, TRANSPORTS, transportOf, type AgentProcess } from './support/agent-process.js';
import { ResponseParser, type RawResponse } from './support/raw-http.js';

const SENDS = 20;

/** Writes each piece as its own packet once the previous one is sent; resolves with up to `count` responses, fewer if the server closes first. */
function exchange(port: number, pieces: readonly string[], count: number): Promise<RawResponse[]> {
  return new Promise((done, fail) => {
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    const parser = new ResponseParser();
    const responses: RawResponse[] = [];
    socket.on('data', (chunk: Buffer) => {
      for (let r = parser.push(chunk); r !== undefined; r = parser.push(Buffer.alloc(0))) responses.push(r);
      if (responses.length >= count) socket.end();
    });
    socket.on('close', () => done(responses));
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? undefined : fail(err)));
    const send = (i: number): void => {
      const piece = pieces[i];
      if (piece !== undefined) socket.write(piece, () => send(i + 1));
    };
    send(0);
  });
}

const put = (key: string): string => `PUT /v1/kv/${key} HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nv`;
const LEADER = 'GET /v1/status/leader HTTP/1.1\r\nHost: x\r\n\r\n';

for (const served of TRANSPORTS)
  describe(`pipelined writes on a durable agent (${served})`, () => {
    let agent: AgentProcess;
    let dataDir: string;
    let transport: string;
    beforeAll(async () => {
      dataDir = await mkdtemp(join(tmpdir(), 'svc-pipelining-'));
      agent = await startAgent({ dataDir, args: ['-http-transport', served] });
      transport = transportOf(agent);
    });
    afterAll(async () => {
      await agent.stop();
      await rm(dataDir, { recursive: true, force: true });
    });

    it('answers a write with a request behind it in one packet, or applies nothing (uWS closes)', async () => {
      const answered: string[] = [];
      for (let i = 0; i < SENDS; i++) {
        const responses = await exchange(agent.port, [put(`one/${i}`) + LEADER], 2);
        if (responses[0]?.status === 200 && responses[0].body.toString() === 'true') answered.push(`one/${i}`);
        if (transport === 'node') expect(responses.map((r) => r.status)).toEqual([200, 200]);
      }
      const applied = (await storedKeys(agent)).filter((k) => k.startsWith('one/'));
      expect(applied.sort()).toEqual(answered.sort());
    });

    it('answers requests sent behind a pending write in later packets in order, or applies nothing unanswered', async () => {
      // uWS reads on once the write is answered (the contract suite pins that); when the packets
      // arrive in the read that brings the write, it closes as above.
      const expected = [
        [200, 'true'],
        [200, '"127.0.0.1:8300"'],
        [200, 'true'],
      ];
      const answered: string[] = [];
      for (let i = 0; i < SENDS; i++) {
        const responses = await exchange(agent.port, [put(`later/${i}`), LEADER, put(`later/${i}b`)], 3);
        const got = responses.map((r) => [r.status, r.body.toString()]);
        expect(got).toEqual(expected.slice(0, got.length));
        if (transport === 'node') expect(got).toHaveLength(3);
        if (got.length >= 1) answered.push(`later/${i}`);
        if (got.length === 3) answered.push(`later/${i}b`);
      }
      const applied = (await storedKeys(agent)).filter((k) => k.startsWith('later/'));
      expect(applied.sort()).toEqual(answered.sort());
    });
  });
