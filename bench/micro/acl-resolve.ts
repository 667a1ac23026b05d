// Micro-bench for the request path of ACLs (src/acl/resolver.ts): a cached token secret resolved
// to its identity plus one decision, for a token with 50 rules (target < 1 µs). Baseline in the
// same run: the same decision on the ACLs-off path.
// Run: node dist/bench/micro/acl-resolve.js
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
  const rules = JSON.stringify(
    Object.fromEntries(
      Object.entries(fiftyRules()).map(([rule, value]) =>
        typeof value === 'string'
          ? [rule, value]
          : [rule, Object.fromEntries((value ?? []).map((r) => [r.name, { policy: r.policy }]))],
      ),
    ),
  );
  const policy = await domain.policies.create({ Name: 'fifty', Rules: rules });
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

if (isEntryPoint(import.meta.url)) {
  runMain(async () => {
    process.stdout.write(`${formatMicro(await runAclResolveMicro())}\n`);
  });
}
