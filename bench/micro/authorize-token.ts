// Instruction counts of authorize with a token, ACLs on (default deny), through the request flow of
// bench/micro/authorize-calls.ts (its harness): N POSTs whose caller presents a token allowed
// `service:write` on every service. `--row hash` stores the token as a cluster's shared view does
// (SecretHash only, docs/decisions.md D23); `--row secret` as one machine does; `--row none` turns
// ACLs off, the floor the token's cost is read against (token minus none: what resolving it costs);
// `--row role` is `hash` with the policy linked through a role (src/acl/grants.ts), read against `hash`.
// `--mode one` sends one body over and over; `--mode distinct` a new body each call (new serials,
// the warm-up's pairs), as authorize-calls.ts's distinct mode. Run it under callgrind with the cut
// around the measured calls (the second dump holds them; its total over `--calls` is per call):
//   valgrind --tool=callgrind --dump-before='*GetLoadAvg*' node dist/bench/micro/authorize-token.js
import { createHash } from 'node:crypto';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { ACL_POLICIES, ACL_ROLES, ACL_TOKENS } from '../../src/acl/model.js';
import { parseRules } from '../../src/acl/rules/parse.js';
import type { StateStore } from '../../src/state/types.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { AUTHORIZE_BODY, distinctAuthorizeBodies } from './authorize.js';
import { harness, type HarnessOptions } from './authorize-calls.js';

const SECRET = '6a1f0c7e-2b5d-4c3a-9e8f-0d1c2b3a4f5e';
const ACCESSOR = '3c0e5f6a-7b8c-4d9e-8f0a-1b2c3d4e5f60';
const POLICY = '9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a';
const ROLE = '8e7d6c5b-4a3f-4e2d-9c1b-0a9f8e7d6c5b';

type Row = 'hash' | 'secret' | 'role' | 'none';
type Mode = 'one' | 'distinct';

/** The token and its policy (through a role for `role`), the token's secret kept as `row` says. */
function tokenAcl(row: 'hash' | 'secret' | 'role'): NonNullable<HarnessOptions['acl']> {
  const rules = 'service_prefix "" { policy = "write" }';
  const policy = { ID: POLICY, Name: 'writer', Description: '', Rules: rules, Datacenters: null, Hash: 'x' };
  const secret =
    row !== 'secret' ? { SecretHash: createHash('sha256').update(SECRET).digest('base64') } : { SecretID: SECRET };
  const token = {
    AccessorID: ACCESSOR,
    ...secret,
    Description: '',
    Policies: row === 'role' ? [] : [{ ID: POLICY }],
    ...(row === 'role' ? { Roles: [{ ID: ROLE }] } : {}),
    ServiceIdentities: [],
    NodeIdentities: [],
    Local: false,
    CreateTime: '2026-11-26T00:00:00Z',
    Hash: 'x',
    Namespace: 'default',
  };
  return {
    token: SECRET,
    async seed(store: StateStore) {
      const role = {
        ID: ROLE,
        Name: 'writers',
        Description: '',
        Policies: [{ ID: POLICY }],
        ServiceIdentities: [],
        NodeIdentities: [],
        TemplatedPolicies: [],
        Hash: 'x',
      };
      await store.commit([
        { op: 'set', table: ACL_POLICIES, key: POLICY, value: { ...policy, Parsed: await parseRules(rules) } },
        ...(row === 'role' ? [{ op: 'set' as const, table: ACL_ROLES, key: ROLE, value: role }] : []),
        { op: 'set', table: ACL_TOKENS, key: ACCESSOR, value: token },
      ]);
    },
  };
}

/** Warm-up bodies, then the measured ones: one body throughout, or each new (a round of serials per 10,000). */
function bodies(mode: Mode, count: number): Buffer[] {
  if (mode === 'one') return Array.from({ length: count }, () => Buffer.from(AUTHORIZE_BODY));
  const out: Buffer[] = [];
  for (let round = 1; out.length < count; round++)
    out.push(...distinctAuthorizeBodies(round).map((b) => Buffer.from(b)));
  return out.slice(0, count);
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    const { values } = parseArgs({
      options: {
        row: { type: 'string', default: 'hash' },
        mode: { type: 'string', default: 'one' },
        calls: { type: 'string', default: '10000' },
        warmup: { type: 'string', default: '20000' },
      },
    });
    const row = values.row as Row;
    const mode = values.mode as Mode;
    if (row !== 'hash' && row !== 'secret' && row !== 'role' && row !== 'none')
      throw new Error(`--row wants hash, secret, role or none`);
    if (mode !== 'one' && mode !== 'distinct') throw new Error(`--mode wants one or distinct`);
    const warmup = Number(values.warmup);
    const calls = Number(values.calls);
    const h = await harness(bodies(mode, warmup + calls), row === 'none' ? {} : { acl: tokenAcl(row) });
    for (let i = 0; i < warmup; i++) h.call(i);
    loadavg(); // callgrind's cut: the measured calls start here
    for (let i = warmup; i < warmup + calls; i++) h.call(i);
    loadavg(); // and end here
    h.close();
    process.stdout.write(`${row} ${mode}: ${calls} calls after ${warmup}; ${h.io.answered} answered\n`);
  });
}
