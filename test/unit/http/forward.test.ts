// The HTTP side of forwarded writes (docs/decisions.md D25): a client agent's write methods hand the
// request to a server, whose route table of write methods runs it behind its own ACL gate. Here the
// client's forwarder calls the server's runner directly; the etcd mailbox between them, the RBAC and
// the deadline are test/cluster/client-writes.test.ts's.
import { describe, expect, it } from 'vitest';
import { replyKey, type Sealed } from '../../../src/acl/sealed.js';
import { silentLogger } from '../../../src/core/log.js';
import { forwardedWriteRunner, forwardingRoutes, writeRoutes, type ForwardedWrite } from '../../../src/http/forward.js';
import type { AclGate } from '../../../src/http/guard.js';
import type { Reply } from '../../../src/http/reply.js';
import { compileRoutes, type CompiledRoute, type Route } from '../../../src/http/routes.js';
import { effectiveToken } from '../../../src/http/token.js';
import type { LogEntry } from '../../support/recording-logger.js';
import { recordingLogger, request, testGate } from './support.js';

/** Who each server-side run acted as, and what it read. */
const ran: string[] = [];
const routes: Route[] = [
  {
    path: '/v1/kv/',
    prefix: true,
    methods: {
      GET: { acl: 'none', handler: () => ({ status: 200, body: 'read locally' }) },
      PUT: {
        acl: { resource: 'key', access: 'write' },
        handler: (req, identity) => {
          ran.push(`${identity.accessorId} ${req.rest} from ${req.head.originNode ?? 'here'}`);
          return {
            status: 200,
            body: req.body ?? '',
            contentType: 'application/octet-stream',
            headers: [['X-Test', 'yes']],
          };
        },
      },
    },
  },
  { path: '/v1/agent/reload', methods: { PUT: { acl: 'none', handler: () => ({ status: 200, body: 'reloaded' }) } } },
];
const server = forwardedWriteRunner(compileRoutes(writeRoutes(routes.slice(0, 1)), testGate(), 1024), silentLogger);
/** The client agent's gate, with its default token "w:key" as the agent's gate has (api.ts). */
const clientGate: AclGate = {
  ...testGate(),
  identify: (req) => testGate().identify(request({ tokenHeader: effectiveToken(req, 'w:key') })),
};
const client: CompiledRoute[] = compileRoutes(
  forwardingRoutes(
    routes.slice(0, 1),
    (write) => server(write),
    () => 'w:key',
    'client-node',
  ),
  clientGate,
  1024,
);

async function onClient(method: string, rest: string, token: string, body?: Buffer): Promise<Reply> {
  const req = request({ method, path: `/v1/kv/${rest}`, tokenHeader: token }, rest, body);
  return (await client[0]?.handlers.get(method)?.(req)) as Reply;
}

/** A write straight to the server's runner, as one forged in etcd would arrive; the reply opened. */
async function forged(write: Omit<ForwardedWrite, 'ReplyKey'>): Promise<{ status: number; body: string }> {
  const key = replyKey();
  const opened = key.open((await server({ ...write, ReplyKey: key.publicKey })) as Sealed) as {
    Status: number;
    Body?: string;
  };
  return { status: opened.Status, body: Buffer.from(opened.Body ?? '', 'base64').toString('utf8') };
}

describe('forwarded writes', () => {
  it("run on the server as the caller's token, and the reply comes back whole", async () => {
    ran.length = 0;
    const bytes = Buffer.from([0, 1, 2, 255, 10]);
    const reply = await onClient('PUT', 'app/bin', 'w:key', bytes);
    expect(reply.status).toBe(200);
    expect(reply.headers).toEqual([['X-Test', 'yes']]);
    expect(reply.contentType).toBe('application/octet-stream');
    expect(Buffer.from(reply.body as Uint8Array).equals(bytes)).toBe(true);
    // Without a token of its own, the caller acts with the client agent's default token.
    await onClient('PUT', 'app/default', '');
    // The server knows which agent asked: "this agent" to a handler (a session's default node).
    expect(ran).toEqual([
      'accessor-of-w:key app/bin from client-node',
      'accessor-of-w:key app/default from client-node',
    ]);
  });

  it("are refused by the client's own check first, and reads stay on the client", async () => {
    ran.length = 0;
    await expect(onClient('PUT', 'app/x', 'r:key')).rejects.toThrow(/Permission denied/);
    const read = await client[0]?.handlers.get('GET')?.(request({ path: '/v1/kv/a' }, 'a'));
    expect(read).toEqual({ status: 200, body: 'read locally' });
    expect(ran).toEqual([]);
  });

  it("are checked again on the server with the token they carry, never the server's default", async () => {
    ran.length = 0;
    const base = { Method: 'PUT', Path: '/v1/kv/app/f', Query: '', Namespace: '', Body: 'eA==' };
    expect(await forged({ ...base, Token: 'r:key' })).toMatchObject({ status: 403 });
    expect(await forged({ ...base, Token: 'unknown' })).toEqual({ status: 403, body: 'ACL not found' });
    // No token is the anonymous one.
    expect(await forged({ ...base, Token: '' })).toMatchObject({ status: 403 });
    expect(ran).toEqual([]);
    expect(await forged({ ...base, Token: 'w:key' })).toEqual({ status: 200, body: 'x' });
  });

  it("are logged at debug by the server as its transports log a request, the token's value hidden", async () => {
    const entries: LogEntry[] = [];
    const logger = { ...recordingLogger(entries), isLevelEnabled: () => true };
    const logged = forwardedWriteRunner(compileRoutes(writeRoutes(routes), testGate(), 1024), {
      ...logger,
      child: () => logger,
    });
    const key = replyKey();
    const write = { Method: 'PUT', Path: '/v1/kv/app/l', Query: 'token=w:key', Token: 'w:key', Namespace: '' };
    await logged({ ...write, ReplyKey: key.publicKey });
    const lines = entries.filter((e) => e.msg === 'Request finished');
    expect(lines.map((l) => [l.obj.method, l.obj.url, l.obj.status, l.obj.from])).toEqual([
      ['PUT', '/v1/kv/app/l?token=<hidden>', 200, 'forwarded'],
    ]);
  });

  it("reach the state routes' write methods only", async () => {
    const write = { Query: '', Token: 'w:key', Namespace: '' };
    expect(await forged({ ...write, Method: 'GET', Path: '/v1/kv/a' })).toMatchObject({ status: 405 });
    expect(await forged({ ...write, Method: 'PUT', Path: '/v1/agent/reload' })).toMatchObject({ status: 404 });
    await expect(server({ Method: 'PUT' })).rejects.toMatchObject({ code: 'CLUSTER_FORWARD_FAILED' });
  });
});
