// The /v1/kv contract, run against the real agent on each backend (kv.test.ts: the embedded
// store; cluster-kv.test.ts: etcd, where KV is read through): shapes, status codes and texts of
// docs/decisions.md#kv-api. The agent must cap values at 1024 bytes (`limits.kv_max_value_size`).
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerOf } from '../../support/errors.js';
import { transportOf, type AgentProcess } from './agent-process.js';
import { ResponseParser, type RawResponse } from './raw-http.js';

/** `start` gives a new agent with an empty KV at each call. */
export function kvApiSuite(start: () => Promise<AgentProcess>): void {
  let agent: AgentProcess;
  const url = (path: string): string => `${agent.url}/v1/kv/${path}`;
  const put = (path: string, body = ''): Promise<Response> => fetch(url(path), { method: 'PUT', body });
  const del = (path: string): Promise<Response> => fetch(url(path), { method: 'DELETE' });

  beforeAll(async () => {
    agent = await start();
  }, 60_000);
  afterAll(() => agent.stop());

  describe('PUT and GET', () => {
    it("stores a raw body and returns Consul's entry shape", async () => {
      const res = await put('shape/one', 'hello');
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('true');
      const got = await fetch(url('shape/one'));
      const index = Number(got.headers.get('x-svc-index'));
      expect(await got.json()).toEqual([
        {
          LockIndex: 0,
          Key: 'shape/one',
          Flags: 0,
          Value: Buffer.from('hello').toString('base64'),
          CreateIndex: index,
          ModifyIndex: index,
        },
      ]);
    });

    it('keeps CreateIndex and advances ModifyIndex on update', async () => {
      await put('shape/upd', 'a');
      const [first] = (await (await fetch(url('shape/upd'))).json()) as { CreateIndex: number; ModifyIndex: number }[];
      await put('shape/upd', 'b');
      const [second] = (await (await fetch(url('shape/upd'))).json()) as { CreateIndex: number; ModifyIndex: number }[];
      expect(second!.CreateIndex).toBe(first!.CreateIndex);
      expect(second!.ModifyIndex).toBeGreaterThan(first!.ModifyIndex);
    });

    it('stores an empty body as a null Value', async () => {
      await put('shape/empty');
      const [entry] = (await (await fetch(url('shape/empty'))).json()) as { Value: unknown }[];
      expect(entry!.Value).toBeNull();
    });

    it('keeps uint64 flags exact', async () => {
      await fetch(url('shape/flags?flags=18446744073709551615'), { method: 'PUT', body: 'x' });
      const text = await (await fetch(url('shape/flags'))).text();
      expect(text).toContain('"Flags":18446744073709551615,');
    });

    it('answers ?raw with the bare bytes and safe headers', async () => {
      const bytes = Buffer.from([0, 1, 2, 255, 10]);
      await fetch(url('shape/bin'), { method: 'PUT', body: bytes });
      const res = await fetch(url('shape/bin?raw'));
      expect(res.headers.get('content-type')).toBe('text/plain');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('content-security-policy')).toBe('sandbox');
      expect(Buffer.from(await res.arrayBuffer())).toEqual(bytes);
    });

    it('answers a missing key with 404, an empty body and an index', async () => {
      const res = await fetch(url('no/such/key'));
      expect(res.status).toBe(404);
      expect(await res.text()).toBe('');
      expect(Number(res.headers.get('x-svc-index'))).toBeGreaterThanOrEqual(1);
    });

    it('lists a subtree with ?recurse, sorted, and 404s an empty one', async () => {
      await put('tree/b', '2');
      await put('tree/a', '1');
      await put('tree/c/d', '3');
      await put('treetop', 't');
      const rows = (await (await fetch(url('tree/?recurse'))).json()) as { Key: string }[];
      expect(rows.map((r) => r.Key)).toEqual(['tree/a', 'tree/b', 'tree/c/d']);
      const wide = (await (await fetch(url('tree?recurse'))).json()) as { Key: string }[];
      expect(wide.map((r) => r.Key)).toEqual(['tree/a', 'tree/b', 'tree/c/d', 'treetop']);
      expect((await fetch(url('nothing/?recurse'))).status).toBe(404);
    });

    it('lists key names with ?keys and rolls up folders with ?separator (and the old spelling)', async () => {
      expect(await (await fetch(url('tree/?keys'))).json()).toEqual(['tree/a', 'tree/b', 'tree/c/d']);
      expect(await (await fetch(url('tree/?keys&separator=/'))).json()).toEqual(['tree/a', 'tree/b', 'tree/c/']);
      expect(await (await fetch(url('tree/?keys&seperator=/'))).json()).toEqual(['tree/a', 'tree/b', 'tree/c/']);
      expect((await fetch(url('none/?keys'))).status).toBe(404);
    });

    it('answers ?keys at the root with [] when the store is empty of matches', async () => {
      const fresh = await start();
      try {
        const res = await fetch(`${fresh.url}/v1/kv/?keys`);
        expect(res.status).toBe(200);
        expect(await res.text()).toBe('[]');
      } finally {
        await fresh.stop();
      }
    });
  });

  describe('check-and-set', () => {
    it('creates only when absent with cas=0', async () => {
      expect(await (await fetch(url('cas/new?cas=0'), { method: 'PUT', body: 'a' })).text()).toBe('true');
      expect(await (await fetch(url('cas/new?cas=0'), { method: 'PUT', body: 'b' })).text()).toBe('false');
      expect(await (await fetch(url('cas/new?raw'))).text()).toBe('a');
    });

    it('updates only at the current ModifyIndex', async () => {
      const [entry] = (await (await fetch(url('cas/new'))).json()) as { ModifyIndex: number }[];
      expect(
        await (await fetch(url(`cas/new?cas=${entry!.ModifyIndex + 100}`), { method: 'PUT', body: 'x' })).text(),
      ).toBe('false');
      expect(await (await fetch(url(`cas/new?cas=${entry!.ModifyIndex}`), { method: 'PUT', body: 'c' })).text()).toBe(
        'true',
      );
      expect(await (await fetch(url('cas/new?raw'))).text()).toBe('c');
    });

    it('deletes only at the current ModifyIndex, and answers true for a key already gone', async () => {
      await put('cas/del', 'x');
      const [entry] = (await (await fetch(url('cas/del'))).json()) as { ModifyIndex: number }[];
      expect(await (await fetch(url(`cas/del?cas=${entry!.ModifyIndex + 1}`), { method: 'DELETE' })).text()).toBe(
        'false',
      );
      expect((await fetch(url('cas/del'))).status).toBe(200);
      expect(await (await fetch(url(`cas/del?cas=${entry!.ModifyIndex}`), { method: 'DELETE' })).text()).toBe('true');
      expect((await fetch(url('cas/del'))).status).toBe(404);
      expect(await (await fetch(url('cas/del?cas=5'), { method: 'DELETE' })).text()).toBe('true');
    });
  });

  describe('DELETE', () => {
    it('deletes one key, then a subtree with ?recurse', async () => {
      await put('gone/a', '1');
      await put('gone/b/c', '2');
      await put('gonex', '3');
      expect(await (await del('gone/a')).text()).toBe('true');
      expect((await fetch(url('gone/a'))).status).toBe(404);
      expect(await (await fetch(url('gone/?recurse'), { method: 'DELETE' })).text()).toBe('true');
      expect((await fetch(url('gone/b/c'))).status).toBe(404);
      expect((await fetch(url('gonex'))).status).toBe(200);
    });
  });

  describe('errors', () => {
    it('rejects a missing key name', async () => {
      for (const method of ['GET', 'PUT', 'DELETE']) {
        const res = await fetch(url(''), { method, ...(method === 'PUT' ? { body: 'x' } : {}) });
        expect([res.status, await res.text()], method).toEqual(answerOf('KV_MISSING_KEY'));
      }
    });

    it("rejects bad flags and cas with 400 and Go's parse text (D3)", async () => {
      const answer = async (path: string, method: string) => {
        const res = await fetch(url(path), { method, ...(method === 'PUT' ? { body: 'x' } : {}) });
        return [res.status, await res.text()];
      };
      expect(await answer('err/a?flags=abc', 'PUT')).toEqual(
        answerOf('KV_BAD_FLAGS', { text: 'abc', reason: 'invalid syntax' }),
      );
      expect(await answer('err/a?cas=-1', 'PUT')).toEqual(
        answerOf('KV_BAD_CAS', { text: '-1', reason: 'invalid syntax' }),
      );
      expect(await answer('err/a?cas=x', 'DELETE')).toEqual(
        answerOf('KV_BAD_CAS', { text: 'x', reason: 'invalid syntax' }),
      );
      expect(await answer('err/a?flags=18446744073709551616', 'PUT')).toEqual(
        answerOf('KV_BAD_FLAGS', { text: '18446744073709551616', reason: 'value out of range' }),
      );
      expect((await fetch(url('err/a'))).status).toBe(404);
    });

    it("rejects conflicting flags with Consul's text", async () => {
      let res = await fetch(url('err/b?cas=0&release=s1'), { method: 'PUT', body: 'x' });
      expect([res.status, await res.text()]).toEqual(answerOf('KV_CONFLICTING_FLAGS', { query: 'cas=0&release=s1' }));
      res = await fetch(url('err/b?recurse&cas=1'), { method: 'DELETE' });
      expect([res.status, await res.text()]).toEqual(answerOf('KV_CONFLICTING_FLAGS', { query: 'cas=1&recurse=' }));
    });

    it('rejects lock operations: no session can exist on this agent', async () => {
      const res = await fetch(url('err/c?acquire=abc'), { method: 'PUT', body: 'x' });
      expect([res.status, await res.text()]).toEqual(answerOf('KV_INVALID_SESSION', { session: 'abc' }));
    });

    it('answers 413 past kv_max_value_size (here 1024) by Content-Length', async () => {
      const res = await put('err/big', 'x'.repeat(1025));
      expect([res.status, await res.text()]).toEqual(answerOf('KV_VALUE_TOO_LARGE', { size: 1025, max: 1024 }));
      expect((await put('err/fits', 'x'.repeat(1024))).status).toBe(200);
    });

    it('answers 413 past the cap for a chunked body, and accepts a small chunked body', async () => {
      const chunked = (size: number): Buffer => {
        const parts: Buffer[] = [
          Buffer.from('PUT /v1/kv/err/chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n'),
        ];
        for (let left = size; left > 0; left -= 256) {
          const n = Math.min(256, left);
          parts.push(Buffer.from(`${n.toString(16)}\r\n${'y'.repeat(n)}\r\n`));
        }
        parts.push(Buffer.from('0\r\n\r\n'));
        return Buffer.concat(parts);
      };
      const send = (bytes: Buffer): Promise<RawResponse> =>
        new Promise((done, fail) => {
          const socket = connect(agent.port, '127.0.0.1', () => socket.write(bytes));
          const parser = new ResponseParser();
          socket.on('data', (c: Buffer) => {
            const r = parser.push(c);
            if (r) {
              socket.destroy();
              done(r);
            }
          });
          socket.on('error', fail);
        });
      const big = await send(chunked(2000));
      if (transportOf(agent) === 'uws') {
        // The uWS listener takes Content-Length bodies only (docs/decisions.md D18).
        expect([big.status, (await send(chunked(600))).status]).toEqual([411, 411]);
        expect((await fetch(url('err/chunked'))).status).toBe(404);
        return;
      }
      expect(big.status).toBe(413);
      expect(big.body.toString()).toContain('Request body(');
      const small = await send(chunked(600));
      expect(small.status).toBe(200);
      expect(await (await fetch(url('err/chunked?raw'))).text()).toBe('y'.repeat(600));
    });
  });
}
