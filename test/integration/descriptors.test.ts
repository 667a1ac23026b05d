// The agent and its open-files limit (docs/decisions.md D16): it starts with the soft limit raised
// to the hard one and logs the limit in force, warning when it is low; out of descriptors it stays
// up, keeps its connections and parked queries, and serves new clients again once descriptors are
// free (docs/decisions.md#descriptor-exhaustion).
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { hasPrlimit } from '../support/open-files.js';
import { startAgent, type AgentProcess } from './support/agent-process.js';
import { get, request, ResponseParser, type RawResponse } from './support/raw-http.js';

describe.runIf(hasPrlimit)('open-files limit', () => {
  let agent: AgentProcess | undefined;
  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
  });

  it('runs with the soft limit raised to the hard limit, and logs it', async () => {
    agent = await startAgent({ nofile: { soft: 1024, hard: 8192 } });
    expect(agent.logs).toContainEqual(
      expect.objectContaining({ level: 'info', msg: 'open-files limit', openFiles: 8192, openFilesHard: 8192 }),
    );
  });

  it('warns with the LimitNOFILE advice when the limit is low and cannot be raised', async () => {
    agent = await startAgent({ nofile: { soft: 1024, hard: 1024 } });
    const line = agent.logs.find((l) => String(l.msg).startsWith('open-files limit'));
    expect(line).toMatchObject({ level: 'warn', openFiles: 1024, openFilesHard: 1024 });
    expect(String(line?.msg)).toMatch(/LimitNOFILE=65536/);
  });
});

/** One kept-alive connection: requests in turn, each answer parsed (Content-Length framing). */
class Connection {
  private readonly parser = new ResponseParser();
  private waiting: ((response: RawResponse) => void)[] = [];

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      for (let r = this.parser.push(chunk); r !== undefined; r = this.parser.push(Buffer.alloc(0)))
        this.waiting.shift()?.(r);
    });
  }

  static open(port: number): Promise<Connection> {
    return new Promise((done, fail) => {
      const socket = connect(port, '127.0.0.1', () => done(new Connection(socket)));
      socket.once('error', fail);
    });
  }

  send(text: string): Promise<RawResponse> {
    return new Promise((done, fail) => {
      this.waiting.push(done);
      this.socket.once('close', () => fail(new Error('connection closed before an answer')));
      this.socket.write(text);
    });
  }
}

/** Waits for a log line; the hang guard is the test's timeout. */
async function logged(agent: AgentProcess, msg: string, after = 0): Promise<void> {
  while (!agent.logs.slice(after).some((l) => l.msg === msg)) await new Promise((resolve) => setTimeout(resolve, 20));
}

const EXHAUSTED =
  'out of file descriptors: new connections wait until some are free, existing ones are kept (raise the open-files limit, see the line logged at start-up)';
const RESUMED = 'file descriptors available again: accepting connections';

describe.runIf(hasPrlimit)('out of descriptors (a 1,024 limit, 1,200 connections)', () => {
  let agent: AgentProcess | undefined;
  const flood: Socket[] = [];
  afterEach(async () => {
    for (const s of flood.splice(0)) s.destroy();
    await agent?.stop();
    agent = undefined;
  });

  /** Opens connections without sending anything; refused or reset ones are expected once the agent is full. */
  const startFlood = (port: number, count: number) => {
    for (let i = 0; i < count; i++) flood.push(connect(port, '127.0.0.1').on('error', () => undefined));
  };

  it('stays up, keeps its connections and parked queries, serves leaves, and accepts again once the flood is gone', async () => {
    agent = await startAgent({ nofile: { soft: 1024, hard: 1024 } });
    const { port } = agent;
    const kept = await Connection.open(port);
    expect((await kept.send(request('PUT', '/v1/kv/watched', 'v1'))).status).toBe(200);
    const index = (await kept.send(get('/v1/kv/watched'))).headers['x-svc-index'];
    const parkedConnections = await Promise.all(Array.from({ length: 3 }, () => Connection.open(port)));
    const parked = parkedConnections.map((c) => c.send(get(`/v1/kv/watched?index=${index}&wait=5m`)));
    const leafConnections = await Promise.all(Array.from({ length: 8 }, () => Connection.open(port)));

    // Right after start, and during a burst of first leaves: the flood fills every descriptor.
    startFlood(port, 1200);
    const burst = leafConnections.map(async (c, i) => {
      const replies: RawResponse[] = [];
      for (let j = 0; j < 5; j++) replies.push(await c.send(get(`/v1/agent/connect/ca/leaf/burst-${i}-${j}`)));
      return replies;
    });
    await logged(agent, EXHAUSTED);

    expect(agent.child.exitCode).toBeNull();
    for (const reply of (await Promise.all(burst)).flat()) {
      // A leaf is signed, or refused with the catalogue's 503 when no signing thread could start.
      if (reply.status !== 200)
        expect({ status: reply.status, body: reply.body.toString() }).toMatchObject({
          status: 503,
          body: expect.stringMatching(/^leaf signing unavailable: no signing thread could start/),
        });
    }
    expect((await kept.send(get('/v1/kv/watched?raw'))).body.toString()).toBe('v1');
    expect((await kept.send(request('PUT', '/v1/kv/watched', 'v2'))).status).toBe(200);
    for (const reply of await Promise.all(parked)) {
      expect(reply.status).toBe(200);
      expect(JSON.parse(reply.body.toString())[0].Value).toBe(Buffer.from('v2').toString('base64'));
    }

    const before = agent.logs.length;
    for (const s of flood.splice(0)) s.destroy();
    await logged(agent, RESUMED, before);
    const fresh = await fetch(`${agent.url}/v1/kv/watched?raw`);
    expect(await fresh.text()).toBe('v2');
    expect(agent.child.exitCode).toBeNull();
  });
});
