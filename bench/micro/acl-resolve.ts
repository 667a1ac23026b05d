// Micro-bench for the request path of ACLs (src/acl/resolver.ts): a cached token secret resolved
// to its identity plus one decision, for a token with 50 rules (target < 1 µs). Baseline in the
// same run: the same decision on the ACLs-off path.
// Run: node dist/bench/micro/acl-resolve.js
// Instructions, a token linking its policy directly against one linking it through a role
// (src/acl/grants.ts): `--links direct|role` resolves 1,000 tokens once each (the first request:
// a cache miss that compiles), then the same 1,000 ten times (cached), cut for callgrind:
//   valgrind --tool=callgrind --dump-before='*GetLoadAvg*' node dist/bench/micro/acl-resolve.js --links role
// the second dump is the first requests, the third the cached ones.
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { initAclState } from '../../src/acl/init.js';
import { AclResolver } from '../../src/acl/resolver.js';
import { createAclDomain } from '../../src/acl/domain.js';
import { systemClock } from '../../src/core/clock.js';
import { silentLogger } from '../../src/core/log.js';
import { openEmbeddedStore } from '../../src/state/embedded/index.js';
import { fiftyRules } from './acl-authorizer.js';
import { isEntryPoint, runMain } from '../support/main.js';
import { formatMicro, measure, type MicroResult } from '../support/micro.js';

export async function runAclResolveMicro(): Promise<MicroResult[]> {
  const store = await openEmbeddedStore({ log: silentLogger });
  await initAclState(store, { initialManagement: undefined }, systemClock);
  const domain = createAclDomain(store, systemClock, { minExpirationTtlMs: 60_000, maxExpirationTtlMs: 86_400_000 });
  const policy = await domain.policies.create({ Name: 'fifty', Rules: fiftyRulesText() });
  const token = await domain.tokens.create({ Policies: [{ ID: policy.value.ID }] });
  const on = new AclResolver(store, { enabled: true, defaultPolicy: 'deny', datacenter: 'dc1' }, systemClock);
  const off = new AclResolver(store, { enabled: false, defaultPolicy: 'allow', datacenter: 'dc1' }, systemClock);
  const secret = token.secret;
  const names = Array.from({ length: 64 }, (_, i) => `app/svc-${i % 10}/config`);
  const results = [
    measure('ACLs off: resolve + key:read', (i) =>
      off.resolve(secret).authorizer.allowed('key', 'read', names[i & 63]),
    ),
    measure('ACLs on: cached resolve + key:read (50 rules)', (i) =>
      on.resolve(secret).authorizer.allowed('key', 'read', names[i & 63]),
    ),
    measure('ACLs on: cached resolve + service:write', (i) =>
      on.resolve(secret).authorizer.allowed('service', 'write', `web-${i % 10}`),
    ),
  ];
  await store.close();
  return results;
}

/** The 50-rule policy as JSON rules text. */
function fiftyRulesText(): string {
  return JSON.stringify(
    Object.fromEntries(
      Object.entries(fiftyRules()).map(([rule, value]) =>
        typeof value === 'string'
          ? [rule, value]
          : [rule, Object.fromEntries((value ?? []).map((r) => [r.name, { policy: r.policy }]))],
      ),
    ),
  );
}

const TOKENS = 1_000;
const CACHED_ROUNDS = 10;

/** Resolves fresh tokens once each, then again from the cache, between callgrind's cuts. */
async function instructionRun(links: 'direct' | 'role'): Promise<string> {
  const store = await openEmbeddedStore({ log: silentLogger });
  await initAclState(store, { initialManagement: undefined }, systemClock);
  const domain = createAclDomain(store, systemClock, { minExpirationTtlMs: 60_000, maxExpirationTtlMs: 86_400_000 });
  const policy = await domain.policies.create({ Name: 'fifty', Rules: fiftyRulesText() });
  const role = await domain.roles.upsert('', { Name: 'fifty-role', Policies: [{ ID: policy.value.ID }] });
  const input = links === 'direct' ? { Policies: [{ ID: policy.value.ID }] } : { Roles: [{ ID: role.key }] };
  const secrets: string[] = [];
  for (let i = 0; i < 2 * TOKENS; i++) secrets.push((await domain.tokens.create(input)).secret);
  const resolver = new AclResolver(store, { enabled: true, defaultPolicy: 'deny', datacenter: 'dc1' }, systemClock);
  const warm = secrets.slice(TOKENS);
  const measured = secrets.slice(0, TOKENS);
  let allowed = 0;
  for (const secret of warm)
    if (resolver.resolve(secret).authorizer.allowed('key', 'read', 'app/svc-1/config')) allowed++;
  loadavg(); // callgrind's cut: first requests from here
  for (const secret of measured)
    if (resolver.resolve(secret).authorizer.allowed('key', 'read', 'app/svc-1/config')) allowed++;
  loadavg(); // cached requests from here
  for (let r = 0; r < CACHED_ROUNDS; r++)
    for (const secret of measured)
      if (resolver.resolve(secret).authorizer.allowed('key', 'read', 'app/svc-1/config')) allowed++;
  loadavg(); // and end here
  await store.close();
  return `${links}: ${TOKENS} first requests, ${TOKENS * CACHED_ROUNDS} cached; ${allowed} allowed\n`;
}

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    const { values } = parseArgs({ options: { links: { type: 'string' } } });
    if (values.links === 'direct' || values.links === 'role') {
      process.stdout.write(await instructionRun(values.links));
      return;
    }
    if (values.links !== undefined) throw new Error('--links wants direct or role');
    process.stdout.write(`${formatMicro(await runAclResolveMicro())}\n`);
  });
}
