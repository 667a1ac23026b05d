// The checks the agent runs, on the real agent against small servers on loopback: TTL through its
// lifecycle, HTTP (pass, fail, a target that hangs, SuccessBeforePassing over a flapping target,
// output cut to 4 KiB), TCP and gRPC health. Each wait is for the agent's own status-change log line.
import { createServer as createHttpServer, type Server } from 'node:http';
import { createServer as createHttp2Server, type Http2Server } from 'node:http2';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answerOf } from '../support/errors.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';

type Check = Record<string, unknown> & { Status: string; Output: string };

describe('agent checks', () => {
  let agent: AgentProcess;
  let http: Server;
  let httpPort: number;
  /** Requests seen per path. */
  const hits = new Map<string, number>();
  beforeAll(async () => {
    agent = await startAgent();
    http = createHttpServer((req, res) => {
      const path = req.url ?? '';
      const n = (hits.get(path) ?? 0) + 1;
      hits.set(path, n);
      if (path === '/ok') res.end('fine');
      else if (path === '/busy') res.writeHead(429).end('later');
      else if (path === '/big') res.end('x'.repeat(10_000) + 'END');
      else if (path === '/hang')
        return; // never answers
      else if (path === '/flap') res.writeHead(n % 2 === 0 ? 200 : 500).end(String(n));
      else if (path === '/method') res.end(`${req.method} ${req.headers['x-probe'] as string}`);
      else res.writeHead(500).end('broken');
    });
    await new Promise<void>((done) => http.listen(0, '127.0.0.1', done));
    httpPort = (http.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await agent.stop();
    http.closeAllConnections();
    await new Promise((done) => http.close(done));
  });

  const put = (path: string, body?: unknown): Promise<Response> =>
    fetch(agent.url + path, { method: 'PUT', ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const check = async (id: string): Promise<Check> =>
    ((await (await fetch(`${agent.url}/v1/agent/checks`)).json()) as Record<string, Check>)[id] as Check;
  /** Registers a check and resolves once the agent logs that it reached `status`. */
  const registerAndWait = async (def: Record<string, unknown>, status: string): Promise<Check> => {
    const from = agent.logs.length;
    const reached = agent.waitForLog(
      (l) => l.msg === 'check status changed' && l.checkId === def.ID && l.status === status,
      from,
    );
    expect((await put('/v1/agent/check/register', def)).status).toBe(200);
    await reached;
    return check(def.ID as string);
  };
  const url = (path: string): string => `http://127.0.0.1:${httpPort}${path}`;

  it('runs a TTL check through its lifecycle', async () => {
    expect((await put('/v1/agent/check/register', { ID: 'mem', Name: 'Memory', TTL: '60s' })).status).toBe(200);
    expect(await check('mem')).toMatchObject({ Status: 'critical', Type: 'ttl', Definition: { TTL: '1m0s' } });
    await put('/v1/agent/check/pass/mem?note=ok');
    expect(await check('mem')).toMatchObject({ Status: 'passing', Output: 'ok' });
    await put('/v1/agent/check/update/mem', { Status: 'warning', Output: 'slow' });
    expect(await check('mem')).toMatchObject({ Status: 'warning', Output: 'slow' });
    await put('/v1/agent/check/fail/mem');
    expect((await check('mem')).Status).toBe('critical');
    const bad = await put('/v1/agent/check/update/mem', { Status: 'up' });
    expect([bad.status, await bad.text()]).toEqual(answerOf('CHECK_UPDATE_STATUS', { status: 'up' }));
    const unknown = await put('/v1/agent/check/pass/nope');
    expect([unknown.status, await unknown.text()]).toEqual(answerOf('CHECK_UNKNOWN', { id: 'nope' }));
    expect((await put('/v1/agent/check/deregister/mem')).status).toBe(200);
    expect(await check('mem')).toBeUndefined();
  });

  it('turns a TTL check critical when the TTL runs out', async () => {
    await put('/v1/agent/check/register', { ID: 'short', Name: 'short', TTL: '300ms' });
    const from = agent.logs.length;
    const expired = agent.waitForLog(
      (l) => l.msg === 'check status changed' && l.checkId === 'short' && l.status === 'critical',
      from,
    );
    await put('/v1/agent/check/pass/short?note=last');
    await expired;
    expect((await check('short')).Output).toBe('TTL expired (last output before timeout follows): last');
  });

  it('runs HTTP checks: 2xx passes, 429 warns, others fail, with method, header and body', async () => {
    const ok = await registerAndWait({ ID: 'h-ok', Name: 'ok', HTTP: url('/ok'), Interval: '200ms' }, 'passing');
    expect(ok.Output).toBe(`HTTP GET ${url('/ok')}: 200 OK Output: fine`);
    const busy = await registerAndWait(
      { ID: 'h-busy', Name: 'busy', HTTP: url('/busy'), Interval: '200ms' },
      'warning',
    );
    expect(busy.Output).toBe(`HTTP GET ${url('/busy')}: 429 Too Many Requests Output: later`);
    const method = await registerAndWait(
      {
        ID: 'h-method',
        Name: 'method',
        HTTP: url('/method'),
        Method: 'POST',
        Header: { 'X-Probe': ['yes'] },
        Body: '{}',
        Interval: '200ms',
        Status: 'critical',
      },
      'passing',
    );
    expect(method.Output).toBe(`HTTP POST ${url('/method')}: 200 OK Output: POST yes`);
    await put('/v1/agent/check/register', {
      ID: 'h-bad',
      Name: 'bad',
      HTTP: url('/broken'),
      Interval: '200ms',
      Status: 'passing',
    });
    const from = agent.logs.length;
    await agent.waitForLog(
      (l) => l.msg === 'check status changed' && l.checkId === 'h-bad' && l.status === 'critical',
      from,
    );
    expect((await check('h-bad')).Output).toBe(`HTTP GET ${url('/broken')}: 500 Internal Server Error Output: broken`);
  });

  it('fails an HTTP check whose target hangs, at its Timeout', async () => {
    const hung = await registerAndWait(
      { ID: 'h-hang', Name: 'hang', HTTP: url('/hang'), Interval: '1s', Timeout: '200ms', Status: 'passing' },
      'critical',
    );
    expect(hung.Output).toBe(
      `Get "${url('/hang')}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
    );
  });

  it('keeps the last 4 KiB of an HTTP body', async () => {
    const big = await registerAndWait({ ID: 'h-big', Name: 'big', HTTP: url('/big'), Interval: '200ms' }, 'passing');
    const prefix = `HTTP GET ${url('/big')}: 200 OK Output: `;
    expect(big.Output.startsWith(prefix)).toBe(true);
    expect(big.Output.slice(prefix.length)).toBe('x'.repeat(4096 - 3) + 'END');
  });

  it('passes a flapping target only after SuccessBeforePassing successes in a row', async () => {
    // The target alternates 500, 200, 500, 200...: two successes in a row never come.
    hits.set('/flap', 0);
    await put('/v1/agent/check/register', {
      ID: 'h-flap',
      Name: 'flap',
      HTTP: url('/flap'),
      Interval: '100ms',
      SuccessBeforePassing: 2,
      FailuresBeforeCritical: 2,
      Status: 'warning',
    });
    // Wait, one request at a time, until the target has been asked six times (three lone successes).
    for (let seen = 0; (hits.get('/flap') ?? 0) < 6 && seen < 10_000; seen++) {
      await new Promise((done) => http.once('request', done));
    }
    const from = agent.logs.length;
    const status = (await check('h-flap')).Status;
    expect(status).toBe('warning');
    expect(agent.logs.slice(0, from).some((l) => l.msg === 'check status changed' && l.checkId === 'h-flap')).toBe(
      false,
    );
  });

  it('runs TCP checks', async () => {
    const server = createTcpServer((socket) => socket.end());
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const port = (server.address() as AddressInfo).port;
    try {
      const up = await registerAndWait(
        { ID: 't-up', Name: 'up', TCP: `127.0.0.1:${port}`, Interval: '200ms' },
        'passing',
      );
      expect(up.Output).toBe(`TCP connect 127.0.0.1:${port}: Success`);
    } finally {
      await new Promise((done) => server.close(done));
    }
    const down = await registerAndWait(
      { ID: 't-down', Name: 'down', TCP: `127.0.0.1:${port}`, Interval: '200ms', Status: 'passing' },
      'critical',
    );
    expect(down.Output).toBe(`dial tcp 127.0.0.1:${port}: connect: connection refused`);
  });

  it('runs gRPC health checks over HTTP/2', async () => {
    const grpc: Http2Server = createHttp2Server();
    grpc.on('stream', (stream) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const body = Buffer.concat(chunks).subarray(5);
        const service = body.length > 2 ? body.subarray(2).toString() : '';
        // HealthCheckResponse{status}: SERVING (1) for "" and "ok", NOT_SERVING (2) otherwise.
        const status = service === '' || service === 'ok' ? 1 : 2;
        stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(Buffer.from([0, 0, 0, 0, 2, 0x08, status]));
      });
    });
    await new Promise<void>((done) => grpc.listen(0, '127.0.0.1', done));
    const port = (grpc.address() as AddressInfo).port;
    try {
      const ok = await registerAndWait(
        { ID: 'g-ok', Name: 'g', GRPC: `127.0.0.1:${port}/ok`, Interval: '200ms' },
        'passing',
      );
      expect(ok.Output).toBe(`gRPC check 127.0.0.1:${port}/ok: success`);
      const not = await registerAndWait(
        { ID: 'g-not', Name: 'g2', GRPC: `127.0.0.1:${port}/down`, Interval: '200ms', Status: 'passing' },
        'critical',
      );
      expect(not.Output).toBe(`gRPC 127.0.0.1:${port}/down serving status: NOT_SERVING`);
    } finally {
      grpc.close();
    }
  });
});
