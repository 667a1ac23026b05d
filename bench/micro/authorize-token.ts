// Instruction counts of authorize with a token, ACLs on (default deny), through the request flow
// as bench/micro/authorize-calls.ts does it: N POSTs of one body whose caller presents a token
// allowed `service:write` on every service. `--row hash` stores the token as a cluster's shared
// view does (SecretHash only, docs/decisions.md D23); `--row secret` as one machine does; `--row
// none` turns ACLs off, the floor the token's cost is read against. Run it under callgrind with the
// cut around the measured calls, against the build before docs/decisions.md D23 (10fe04c^):
//   valgrind --tool=callgrind --dump-before='*GetLoadAvg*' node dist/bench/micro/authorize-token.js
import { createHash } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { ACL_POLICIES, ACL_TOKENS } from '../../src/acl/model.js';
import { AclResolver } from '../../src/acl/resolver.js';
import { parseRules } from '../../src/acl/rules/parse.js';
import { IntentionStore } from '../../src/connect/intentions/store.js';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/log.js';
import { Metrics } from '../../src/core/metrics.js';
import { aclGate } from '../../src/http/api.js';
import { authorizeRoutes } from '../../src/http/handlers/authorize.js';
import type { Reply } from '../../src/http/reply.js';
import { RequestFlow, type TransportIo } from '../../src/http/request-flow.js';
import type { RequestHead } from '../../src/http/request.js';
import { compileRoutes, type CompiledRoute } from '../../src/http/routes.js';
import { openEmbeddedStore } from '../../src/state/embedded/index.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { AUTHORIZE_BODY, benchIntentions } from './authorize.js';

const SECRET = '6a1f0c7e-2b5d-4c3a-9e8f-0d1c2b3a4f5e';
const ACCESSOR = '3c0e5f6a-7b8c-4d9e-8f0a-1b2c3d4e5f60';
const POLICY = '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a';

class CountingIo implements TransportIo<number, Buffer> {
  answered = 0;
  statuses = new Map<number, number>();
  write(_handle: number, reply: Reply): void {
    this.answered++;
    this.statuses.set(reply.status, (this.statuses.get(reply.status) ?? 0) + 1);
  }
  writeLate(handle: number, reply: Reply): void {
    this.write(handle, reply);
  }
  refuse(handle: number, reply: Reply): void {
    this.write(handle, reply);
  }
  onGone(): void {}
  readBody(_handle: number, piece: (chunk: Buffer, isLast: boolean) => void): void {
    piece(this.body, true);
  }
  keep(chunk: Buffer): Buffer {
    return Buffer.from(chunk);
  }
  constructor(readonly body: Buffer) {}
}

type Row = 'hash' | 'secret' | 'none';

async function harness(row: Row): Promise<{ call(): void; io: CountingIo; close(): void }> {
  const store = await openEmbeddedStore({ log: silentLogger });
  await store.commit(benchIntentions());
  const rules = 'service_prefix "" { policy = "write" }';
  const policy = { ID: POLICY, Name: 'writer', Description: '', Rules: rules, Datacenters: null, Hash: 'x' };
  const secret =
    row === 'hash' ? { SecretHash: createHash('sha256').update(SECRET).digest('base64') } : { SecretID: SECRET };
  const token = {
    AccessorID: ACCESSOR,
    ...secret,
    Description: '',
    Policies: [{ ID: POLICY }],
    ServiceIdentities: [],
    NodeIdentities: [],
    Local: false,
    CreateTime: '2026-11-26T00:00:00Z',
    Hash: 'x',
    Namespace: 'default',
  };
  await store.commit([
    { op: 'set', table: ACL_POLICIES, key: POLICY, value: { ...policy, Parsed: await parseRules(rules) } },
    { op: 'set', table: ACL_TOKENS, key: ACCESSOR, value: token },
  ]);
  const intentions = new IntentionStore(store, systemClock);
  const resolver = new AclResolver(
    store,
    { enabled: row !== 'none', defaultPolicy: 'deny', datacenter: 'dc1' },
    systemClock,
  );
  const routes = authorizeRoutes({
    intentions,
    connectEnabled: true,
    cacheMaxEntries: 10_000,
    metrics: new Metrics(systemClock),
  });
  const route = compileRoutes(
    routes,
    aclGate(resolver, () => undefined),
    1 << 20,
  )[0] as CompiledRoute;
  const body = Buffer.from(AUTHORIZE_BODY);
  const io = new CountingIo(body);
  const flow = new RequestFlow(io, silentLogger, undefined);
  const length = String(body.length);
  return {
    io,
    call() {
      flow.framing.contentLengths = 1;
      flow.framing.contentLength = length;
      flow.framing.transferEncoding = undefined;
      const head: RequestHead = {
        method: 'POST',
        path: '/v1/agent/connect/authorize',
        rawQuery: '',
        tokenHeader: row === 'none' ? '' : SECRET,
        authorization: '',
        namespaceHeader: '',
        closeConnection: false,
      };
      flow.route(0, route, head, undefined);
    },
    close() {
      intentions.close();
      void store.close();
    },
  };
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    const { values } = parseArgs({
      options: {
        row: { type: 'string', default: 'hash' },
        calls: { type: 'string', default: '10000' },
        warmup: { type: 'string', default: '20000' },
      },
    });
    const row = values.row as Row;
    if (row !== 'hash' && row !== 'secret' && row !== 'none') throw new Error(`--row wants hash, secret or none`);
    const warmup = Number(values.warmup);
    const calls = Number(values.calls);
    const h = await harness(row);
    for (let i = 0; i < warmup; i++) h.call();
    loadavg(); // callgrind's cut: the measured calls start here
    for (let i = 0; i < calls; i++) h.call();
    loadavg(); // and end here
    h.close();
    process.stdout.write(`${row}: ${calls} calls after ${warmup}; statuses ${[...h.io.statuses]}\n`);
  });
}
