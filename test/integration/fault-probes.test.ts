// Malformed request heads and bodies against the real agent, over raw sockets, on each
// transport: each gets an answer, or a close where the
// transport's own parser drops the connection, within 2 s (never held until the idle timeout),
// and none applies a write. What each transport answers is docs/decisions.md D18.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, storedKeys, TRANSPORTS, transportOf, type AgentProcess } from './support/agent-process.js';
import { ResponseParser, type RawResponse } from './support/raw-http.js';

/** The bound on an answer or a close: far below the 10 s idle timeout a silent server would hold the connection for. */
const ANSWER_MS = 2_000;

/** The first answer, or the close, whichever comes first; rejects after ANSWER_MS. */
function firstAnswer(port: number, raw: string): Promise<RawResponse | 'closed'> {
  return new Promise((done, fail) => {
    const socket = connect(port, '127.0.0.1');
    const parser = new ResponseParser();
    const timer = setTimeout(() => {
      socket.destroy();
      fail(new Error(`neither an answer nor a close within ${ANSWER_MS} ms`));
    }, ANSWER_MS);
    const finish = (result: RawResponse | 'closed'): void => {
      clearTimeout(timer);
      socket.destroy();
      done(result);
    };
    socket.on('data', (chunk: Buffer) => {
      const response = parser.push(chunk);
      if (response !== undefined) finish(response);
    });
    socket.on('close', () => finish('closed'));
    socket.on('error', () => {}); // a reset is a close
    socket.write(raw);
  });
}

const BODY = 'Content-Length: 5\r\n\r\nhello';
const manyHeaders = Array.from({ length: 2000 }, (_, i) => `X-Probe-${i}: v\r\n`).join('');

/** [probe, request, status on node:http (llhttp), status on uWS]; node:http redirects `*` and absolute-form to a clean path (301), as ServeMux does. */
const PROBES: readonly (readonly [string, string, number, number])[] = [
  ['a raw space in the path', `PUT /v1/kv/a b HTTP/1.1\r\nHost: x\r\n${BODY}`, 400, 505],
  ['a 100 KB URL', `PUT /v1/kv/${'u'.repeat(100 * 1024)} HTTP/1.1\r\nHost: x\r\n${BODY}`, 431, 431],
  ['2,000 headers', `PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\n${manyHeaders}${BODY}`, 431, 431],
  ['the asterisk form', `PUT * HTTP/1.1\r\nHost: x\r\n${BODY}`, 301, 505],
  ['the absolute form', `PUT http://x/v1/kv/a HTTP/1.1\r\nHost: x\r\n${BODY}`, 301, 505],
  ['NUL in the path', `PUT /v1/kv/a\0b HTTP/1.1\r\nHost: x\r\n${BODY}`, 400, 505],
  ['a tab in the path', `PUT /v1/kv/a\tb HTTP/1.1\r\nHost: x\r\n${BODY}`, 400, 505],
  ['a lowercase method', `put /v1/kv/a HTTP/1.1\r\nHost: x\r\n${BODY}`, 400, 501],
  ['an unknown method', `FROB /v1/kv/a HTTP/1.1\r\nHost: x\r\n${BODY}`, 400, 501],
  [
    'a chunk longer than its size',
    'PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n',
    400,
    411,
  ],
  ['two Host headers', `PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nHost: y\r\n${BODY}`, 400, 400],
  ['HTTP/1.1 without Host', `PUT /v1/kv/a HTTP/1.1\r\n${BODY}`, 400, 400],
];

for (const served of TRANSPORTS)
  describe(`malformed requests (${served})`, () => {
    let agent: AgentProcess;
    let transport: string;
    beforeAll(async () => {
      agent = await startAgent({ args: ['-http-transport', served] });
      transport = transportOf(agent);
    });
    afterAll(() => agent.stop());

    const keys = (): Promise<string[]> => storedKeys(agent);

    it.each(PROBES)('%s: answered at once, nothing written', async (_name, raw, onNode, onUws) => {
      const answer = await firstAnswer(agent.port, raw);
      expect(answer === 'closed' ? 'closed' : answer.status).toBe(transport === 'uws' ? onUws : onNode);
      expect(await keys()).toEqual([]);
    });

    it('answers HTTP/1.0 at once: a real answer on node:http, 505 and a close on uWS', async () => {
      const answer = await firstAnswer(agent.port, `PUT /v1/kv/a HTTP/1.0\r\n${BODY}`);
      if (answer === 'closed') throw new Error('closed without an answer');
      if (transport === 'uws') {
        expect([answer.status, answer.headers.connection]).toEqual([505, 'close']);
        expect(await keys()).toEqual([]);
      } else {
        expect(answer.status).toBe(200);
        expect(await (await fetch(`${agent.url}/v1/kv/a?raw`)).text()).toBe('hello');
        await fetch(`${agent.url}/v1/kv/a`, { method: 'DELETE' });
      }
    });
  });
