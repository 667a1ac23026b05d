// Request framing (RFC 9112 section 6) against the real agent, over raw sockets: every unsound
// framing is refused with the connection closed and nothing applied, a request smuggled behind
// it included. Runs on both transports (vitest.config.ts); where uWS's own parser closes the
// connection without an answer, or accepts what it should not, docs/decisions.md D18 says so.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { ResponseParser, type RawResponse } from './support/raw-http.js';

/** Sends raw bytes; resolves with every response read once the server closes (the test's timeout guards a hang). */
function untilClosed(port: number, raw: string): Promise<RawResponse[]> {
  return new Promise((done, fail) => {
    const socket = connect(port, '127.0.0.1');
    const parser = new ResponseParser();
    const responses: RawResponse[] = [];
    socket.on('data', (chunk: Buffer) => {
      for (let r = parser.push(chunk); r !== undefined; r = parser.push(Buffer.alloc(0))) responses.push(r);
    });
    socket.on('close', () => done(responses));
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? undefined : fail(err)));
    socket.write(raw);
  });
}

const SMUGGLED = 'PUT /v1/kv/smuggled HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nz';

describe('request framing', () => {
  let agent: AgentProcess;
  let transport: string;
  beforeAll(async () => {
    agent = await startAgent();
    transport = String(agent.logs.find((l) => l.msg === 'svc-agent started')?.transport);
  });
  afterAll(() => agent.stop());

  const keys = async (): Promise<string[]> => {
    const res = await fetch(`${agent.url}/v1/kv/?keys`);
    return res.status === 404 ? [] : ((await res.json()) as string[]);
  };

  /** The framing is refused: a 400/501 (or, where uWS's parser refuses first, a bare close), nothing applied. */
  const refused = async (raw: string, status: number, text: RegExp, { uwsClosesSilently = false } = {}): Promise<void> => {
    const responses = await untilClosed(agent.port, raw);
    if (transport === 'uws' && uwsClosesSilently) {
      expect(responses).toEqual([]);
    } else {
      expect(responses.map((r) => r.status)).toEqual([status]);
      expect(responses[0]?.headers.connection).toBe('close');
      expect(responses[0]?.body.toString()).toMatch(text);
      expect(responses[0]?.headers['x-svc-default-acl-policy']).toBe('allow');
    }
    expect(await keys()).toEqual([]);
  };

  it('refuses two different Content-Length headers, and the request smuggled behind them never runs', async () => {
    await refused(`PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: ${5 + SMUGGLED.length}\r\n\r\nhello${SMUGGLED}`, 400, /Content-Length/);
  });

  it('refuses a repeated Content-Length even when the values agree, on any path', async () => {
    await refused(`PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello${SMUGGLED}`, 400, /Content-Length/);
    await refused(`PUT /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello${SMUGGLED}`, 400, /Content-Length/);
  });

  it('refuses a negative or non-numeric Content-Length', async () => {
    await refused('PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\nabc', 400, /Content-Length/);
    await refused('PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: 3x\r\n\r\nabc', 400, /Content-Length/);
  });

  it('refuses Content-Length together with Transfer-Encoding', async () => {
    await refused(`PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n${SMUGGLED}`, 400, /Content-Length/, { uwsClosesSilently: true });
  });

  it('refuses chunked not last or applied twice (400), and answers a coding before chunked with 501', async () => {
    const body = `3\r\nabc\r\n0\r\n\r\n${SMUGGLED}`;
    await refused(`PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n${body}`, 400, /Transfer-Encoding/);
    await refused(`PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n${body}`, 400, /Transfer-Encoding/);
    await refused(`PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n${body}`, 400, /Transfer-Encoding/);
    await refused(`PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n${body}`, 501, /gzip, chunked.*not supported/);
  });

  it('refuses a bad chunk size', async () => {
    await refused(`PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n${SMUGGLED}`, 400, /chunk/, { uwsClosesSilently: true });
  });

  it('still accepts chunked in any case, and a plain Content-Length', async () => {
    let responses = await untilClosed(agent.port, 'PUT /v1/kv/ok1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n');
    expect(responses.map((r) => r.status)).toEqual([200]);
    responses = await untilClosed(agent.port, 'PUT /v1/kv/ok2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc');
    expect(responses.map((r) => r.status)).toEqual([200]);
    expect(await keys()).toEqual(['ok1', 'ok2']);
    expect(await (await fetch(`${agent.url}/v1/kv/ok1?raw`)).text()).toBe('abc');
    await fetch(`${agent.url}/v1/kv/?recurse`, { method: 'DELETE' });
  });

  describe('on the node transport (llhttp)', () => {
    it('refuses chunk data longer than its size, applying nothing', async ({ skip }) => {
      if (transport !== 'node') skip('uWS accepts the chunk: docs/decisions.md D18');
      await refused(`PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcde\r\n0\r\n\r\n${SMUGGLED}`, 400, /chunk/);
    });

    it('answers HTTP/1.0, closing unless keep-alive was asked', async ({ skip }) => {
      if (transport !== 'node') skip('uWS does not answer HTTP/1.0: docs/decisions.md D18');
      const closed = await untilClosed(agent.port, 'GET /v1/status/leader HTTP/1.0\r\n\r\n');
      expect(closed.map((r) => r.status)).toEqual([200]);
      expect(closed[0]?.body.toString()).toBe('"127.0.0.1:8300"');
      // Kept alive: a second request on the same connection is answered too.
      const kept = await untilClosed(agent.port, 'GET /v1/status/leader HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /v1/status/peers HTTP/1.0\r\n\r\n');
      expect(kept.map((r) => r.status)).toEqual([200, 200]);
      expect(kept[0]?.headers.connection).toBe('keep-alive');
    });

    it('answers an HTTP/1.1 request without Host with 400', async ({ skip }) => {
      if (transport !== 'node') skip('uWS closes without an answer: docs/decisions.md D18');
      await refused(`PUT /v1/kv/a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc`, 400, /Host/);
    });
  });
});
