// Issue 44's login figure (docs/decisions.md#auth-methods): the round trip of POST /v1/acl/login
// against one agent (durable store, ACLs on), with a jwt method on a static PEM key and one on a
// JWKS served by a loopback server in this process (kept by the agent after its first fetch), and
// of POST /v1/acl/logout. Each JWT is signed before its request (outside the timing); logins and
// logouts alternate, so the token table keeps its size. p50 and p99 over N round trips, after a
// warm-up; the JWKS server's fetch count shows the set was kept.
// JWTs are signed with node:crypto here (jose stays the one import of src/acl/auth-methods/jwt.ts).
// Run: node dist/bench/sizing/login.js [--logins 500] [--warmup 50]
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AGENT_MISSING, agentBuilt, startAgent } from '../support/agent.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { LOOPBACK } from '../support/ports.js';
import { formatTable, round, writeJson } from '../support/report.js';
import { quantileSorted } from '../support/stats.js';

const MANAGEMENT = '5b1c7a8e-2f3d-4e5a-9b6c-7d8e9f0a1b2c';

interface Row {
  readonly method: string;
  readonly step: 'login' | 'logout';
  readonly p50Ms: number;
  readonly p99Ms: number;
}

export async function runLoginBench(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: { logins: { type: 'string', default: '500' }, warmup: { type: 'string', default: '50' } },
  });
  const logins = Number(values.logins);
  const warmup = Number(values.warmup);
  if (!agentBuilt()) {
    process.stdout.write(`${AGENT_MISSING}\n`);
    return;
  }
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const jwk = { ...pair.publicKey.export({ format: 'jwk' }), kid: 'bench', alg: 'ES256' };
  let jwksFetches = 0;
  const jwks = createServer((_req, res) => {
    jwksFetches++;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((done) => jwks.listen(0, LOOPBACK, done));
  const address = jwks.address();
  if (address === null || typeof address === 'string') throw new Error('no JWKS address');
  const dir = await mkdtemp(join(tmpdir(), 'svc-login-bench-'));
  const configFile = join(dir, 'acl.json');
  await writeFile(
    configFile,
    JSON.stringify({ acl: { enabled: true, default_policy: 'deny', tokens: { initial_management: MANAGEMENT } } }),
  );
  const agent = await startAgent('durable', ['-config-file', configFile]);
  const base = `http://${LOOPBACK}:${agent.port}`;
  const call = async (
    method: string,
    path: string,
    body: unknown,
    token?: string,
  ): Promise<Record<string, unknown>> => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: token === undefined ? {} : { 'X-Svc-Token': token },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  const rows: Row[] = [];
  try {
    const common = { BoundAudiences: ['bench'], ClaimMappings: { sub: 'name' } };
    const methods = {
      'static key': { JWTValidationPubKeys: [pair.publicKey.export({ type: 'spki', format: 'pem' }).toString()] },
      jwks: { JWKSURL: `http://${LOOPBACK}:${address.port}/jwks` },
    };
    for (const [label, keys] of Object.entries(methods)) {
      const name = label.replace(' ', '-');
      await call('PUT', '/v1/acl/auth-method', { Name: name, Type: 'jwt', Config: { ...common, ...keys } }, MANAGEMENT);
      await call(
        'PUT',
        '/v1/acl/binding-rule',
        { AuthMethod: name, BindType: 'service', BindName: '${value.name}' },
        MANAGEMENT,
      );
      const loginMs: number[] = [];
      const logoutMs: number[] = [];
      for (let i = 0; i < warmup + logins; i++) {
        const now = Math.floor(Date.now() / 1000);
        const jwt = signEs256(pair.privateKey, { sub: `svc-${i % 50}`, aud: 'bench', iat: now, exp: now + 300 });
        let t = performance.now();
        const token = await call('POST', '/v1/acl/login', { AuthMethod: name, BearerToken: jwt });
        const login = performance.now() - t;
        t = performance.now();
        await call('POST', '/v1/acl/logout', undefined, token.SecretID as string);
        const logout = performance.now() - t;
        if (i >= warmup) {
          loginMs.push(login);
          logoutMs.push(logout);
        }
      }
      for (const [step, samples] of [
        ['login', loginMs],
        ['logout', logoutMs],
      ] as const) {
        const sorted = [...samples].sort((a, b) => a - b);
        rows.push({ method: label, step, p50Ms: quantileSorted(sorted, 0.5), p99Ms: quantileSorted(sorted, 0.99) });
      }
    }
  } finally {
    await agent.stop();
    await new Promise((done) => jwks.close(done));
    await rm(dir, { recursive: true, force: true });
  }
  process.stdout.write(
    `login round trip: ${logins} logins per method after ${warmup} warm-up, one agent (durable store)\n${formatTable(
      ['method', 'step', 'p50 ms', 'p99 ms'],
      rows.map((r) => [r.method, r.step, round(r.p50Ms), round(r.p99Ms)]),
    )}\nJWKS fetches: ${jwksFetches} (one when the method was written, one for the agent's kept set)\n`,
  );
  const path = await writeJson('login', { logins, warmup, rows, jwksFetches });
  process.stdout.write(`wrote ${path}\n`);
}

/** A compact JWS (ES256, kid `bench`). */
function signEs256(key: KeyObject, claims: Record<string, unknown>): string {
  const part = (o: unknown): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  const input = `${part({ alg: 'ES256', kid: 'bench' })}.${part(claims)}`;
  const signature = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

if (isEntryPoint(import.meta.url)) runMain(() => runLoginBench(process.argv.slice(2)));
