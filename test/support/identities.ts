// ACL identities for unit tests that call domain code or routes directly, without a resolver.
import { allowAllAuthorizer, compileAuthorizer } from '../../src/acl/authorizer.js';
import type { Identity } from '../../src/acl/identity.js';
import { parseRules } from '../../src/acl/rules/parse.js';

/** The anonymous caller with ACLs off: allowed everything. */
export const everyone: Identity = {
  authorizer: allowAllAuthorizer,
  accessorId: '',
  anonymous: true,
  namespace: 'default',
};

/** A caller whose rights are `rules` (default deny); `accessorId` names it. */
export async function identityWith(rules: string, accessorId = 'a1'): Promise<Identity> {
  const authorizer = compileAuthorizer({
    datacenter: 'dc1',
    defaultPolicy: 'deny',
    policies: [await parseRules(rules)],
  });
  return { authorizer, accessorId, anonymous: false, namespace: 'default' };
}
