// Request framing (RFC 9112 section 6) against the real agent, over raw sockets: every unsound
// framing is refused with the connection closed and nothing applied, a request smuggled behind
// it included. Runs on both transports; where uWS's own parser answers first,
// or the uWS adapter refuses more (every chunked body), docs/decisions.md D18 says so.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, storedKeys, TRANSPORTS, transportOf, type AgentProcess } from './support/agent-process.js';
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

for (const served of TRANSPORTS)
  describe(`request framing (${served})`, () => {
    let agent: AgentProcess;
    let transport: string;
    beforeAll(async () => {
      agent = await startAgent({ args: ['-http-transport', served] });
      transport = transportOf(agent);
    });
    afterAll(() => agent.stop());

    const keys = (): Promise<string[]> => storedKeys(agent);

    /**
     * The framing is refused: a 400/501 with the agent's headers and the connection closed, nothing
     * applied. On uWS, `uws` says what differs: its own parser's bare answer (`bare`), or the
     * adapter's 411 for every chunked body (docs/decisions.md D18).
     */
    const refused = async (
      raw: string,
      status: number,
      text: RegExp,
      uws?: { bare: number } | { status: 411 },
    ): Promise<void> => {
      const responses = await untilClosed(agent.port, raw);
      if (transport === 'uws' && uws !== undefined && 'bare' in uws) {
        expect(responses.map((r) => [r.status, r.headers.connection])).toEqual([[uws.bare, 'close']]);
      } else {
        const [expected, pattern] =
          transport === 'uws' && uws !== undefined ? [411, /Content-Length only/] : [status, text];
        expect(responses.map((r) => r.status)).toEqual([expected]);
        expect(responses[0]?.headers.connection).toBe('close');
        expect(responses[0]?.body.toString()).toMatch(pattern);
        expect(responses[0]?.headers['x-svc-default-acl-policy']).toBe('allow');
      }
      expect(await keys()).toEqual([]);
    };

    it('refuses two different Content-Length headers, and the request smuggled behind them never runs', async () => {
      await refused(
        `PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: ${5 + SMUGGLED.length}\r\n\r\nhello${SMUGGLED}`,
        400,
        /Content-Length/,
      );
    });

    it('refuses a repeated Content-Length even when the values agree, on any path', async () => {
      await refused(
        `PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello${SMUGGLED}`,
        400,
        /Content-Length/,
      );
      await refused(
        `PUT /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello${SMUGGLED}`,
        400,
        /Content-Length/,
      );
    });

    it('refuses a negative or non-numeric Content-Length', async () => {
      await refused('PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\nabc', 400, /Content-Length/);
      await refused('PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: 3x\r\n\r\nabc', 400, /Content-Length/);
    });

    it('refuses Content-Length together with Transfer-Encoding', async () => {
      await refused(
        `PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n${SMUGGLED}`,
        400,
        /Content-Length/,
        { bare: 400 },
      );
    });

    it('refuses chunked not last or applied twice (400), and answers a coding before chunked with 501', async () => {
      const body = `3\r\nabc\r\n0\r\n\r\n${SMUGGLED}`;
      await refused(
        `PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n${body}`,
        400,
        /Transfer-Encoding/,
      );
      await refused(
        `PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n${body}`,
        400,
        /Transfer-Encoding/,
      );
      await refused(
        `PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n${body}`,
        400,
        /Transfer-Encoding/,
      );
      await refused(
        `PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n${body}`,
        501,
        /gzip, chunked.*not supported/,
      );
    });

    it('refuses a bad chunk size', async () => {
      await refused(
        `PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n${SMUGGLED}`,
        400,
        /chunk/,
        { status: 411 },
      );
    });

    it('still accepts chunked in any case (411 on uWS), and a plain Content-Length', async () => {
      let responses = await untilClosed(
        agent.port,
        'PUT /v1/kv/ok1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
      );
      expect(responses.map((r) => r.status)).toEqual([transport === 'uws' ? 411 : 200]);
      responses = await untilClosed(
        agent.port,
        'PUT /v1/kv/ok2 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc',
      );
      expect(responses.map((r) => r.status)).toEqual([200]);
      expect(await keys()).toEqual(transport === 'uws' ? ['ok2'] : ['ok1', 'ok2']);
      expect(await (await fetch(`${agent.url}/v1/kv/ok2?raw`)).text()).toBe('abc');
      await fetch(`${agent.url}/v1/kv/?recurse`, { method: 'DELETE' });
    });

    it('refuses chunk data longer than its size (uWS: every chunked body, 411), applying nothing', async () => {
      await refused(
        `PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcde\r\n0\r\n\r\n${SMUGGLED}`,
        400,
        /chunk/,
        { status: 411 },
      );
      await refused(
        'PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n',
        400,
        /chunk/,
        { status: 411 },
      );
    });

    it('answers an HTTP/1.1 request without Host, or with two, 400 and closes', async () => {
      await refused(`PUT /v1/kv/a HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc${SMUGGLED}`, 400, /Host/, { bare: 400 });
      await refused(
        `PUT /v1/kv/a HTTP/1.1\r\nHost: x\r\nHost: y\r\nContent-Length: 3\r\n\r\nabc${SMUGGLED}`,
        400,
        /Host/,
        { bare: 400 },
      );
    });

    it('answers HTTP/1.0 at once: node:http for real, closing unless keep-alive was asked; uWS 505 and a close', async () => {
      const closed = await untilClosed(agent.port, 'GET /v1/status/leader HTTP/1.0\r\n\r\n');
      if (transport === 'uws') {
        expect(closed.map((r) => [r.status, r.headers.connection])).toEqual([[505, 'close']]);
        return;
      }
      expect(closed.map((r) => r.status)).toEqual([200]);
      expect(closed[0]?.body.toString()).toBe('"127.0.0.1:8300"');
      // Kept alive: a second request on the same connection is answered too.
      const kept = await untilClosed(
        agent.port,
        'GET /v1/status/leader HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /v1/status/peers HTTP/1.0\r\n\r\n',
      );
      expect(kept.map((r) => r.status)).toEqual([200, 200]);
      expect(kept[0]?.headers.connection).toBe('keep-alive');
    });
  });
