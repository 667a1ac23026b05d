// The one authorize function, directly (no HTTP, no agent): each step and Consul's order of them
// (connect enabled → request checks → the caller resolved and service:write on the Target →
// partition → namespace → decision), a checked request skipping the checks, and the five
// namespace steps.
import { describe, expect, it } from 'vitest';
import type { Identity } from '../../../src/acl/identity.js';
import type { Access, Authorizer, Resource } from '../../../src/acl/types.js';
import {
  authorize,
  checkAuthorizeRequest,
  DEFAULT_ALLOW,
  DEFAULT_DENY,
  type AuthorizeDeps,
  type AuthorizeRequest,
} from '../../../src/connect/authorize.js';
import { buildIntentionIndex } from '../../../src/connect/intentions/index.js';
import { intentionKey } from '../../../src/connect/intentions/model.js';
import { normalizeIntention, storedIntention, type IntentionInput } from '../../../src/connect/intentions/validate.js';
import { agentErrorOf } from '../../support/errors.js';

const uri = (service: string, ns = 'default', partition?: string): string =>
  `spiffe://11111111-2222-3333-4444-555555555555.consul${partition === undefined ? '' : `/ap/${partition}`}/ns/${ns}/dc/dc1/svc/${service}`;

/** One allow per destination namespace from any source, so the reason names the namespace used. */
function deps(connectEnabled = true, ...inputs: IntentionInput[]): AuthorizeDeps {
  const rows = inputs.map((input, i) => {
    const value = storedIntention(normalizeIntention(input, 'default'));
    return {
      key: intentionKey(value.DestinationNS, value.DestinationName, value.SourceNS, value.SourceName),
      value,
      createIndex: i + 1,
      modifyIndex: i + 1,
    };
  });
  const index = buildIntentionIndex(rows, rows.length);
  return { connectEnabled, intentions: { current: () => index } };
}
const NAMESPACES = ['body-ns', 'query-ns', 'header-ns', 'token-ns', 'default'];
const everyNamespace = deps(
  true,
  ...NAMESPACES.map((ns): IntentionInput => ({
    SourceNS: '*',
    SourceName: '*',
    DestinationNS: ns,
    DestinationName: 'db',
    Action: 'allow',
  })),
);

/** An identity whose authorizer records what it was asked, in `log`, and grants service:write on `writable`. */
function caller(
  log: string[],
  options: { writable?: string; namespace?: string; defaultAllow?: boolean } = {},
): Identity {
  const authorizer: Authorizer = {
    allowed: (resource: Resource, access: Access, name?: string) => {
      log.push(`${resource}:${access} ${name ?? ''}`);
      return resource === 'service' && access === 'write' && name === (options.writable ?? name);
    },
    keyWritePrefix: () => false,
    anyAllowed: () => false,
    allAllowed: () => false,
    defaultAllow: options.defaultAllow ?? false,
  };
  return { authorizer, accessorId: 'accessor-1', anonymous: false, namespace: options.namespace ?? '' };
}

/** A Caller that notes when it is resolved. */
const lazy = (log: string[], identity: Identity) => (): Identity => {
  log.push('resolve');
  return identity;
};

const failure = (fn: () => unknown): string => {
  const err = agentErrorOf(fn);
  return `${err.kind}: ${err.message}`;
};

describe('authorize: the steps in order', () => {
  const request: AuthorizeRequest = { Target: 'db', ClientCertURI: uri('web') };

  it('connect disabled refuses first, before the request is looked at', () => {
    const log: string[] = [];
    expect(failure(() => authorize(deps(false), { Target: '', ClientCertURI: 'tubes' }, lazy(log, caller(log))))).toBe(
      'invalid: Connect must be enabled in order to use this endpoint',
    );
    expect(log).toEqual([]);
  });

  it.each([
    ['not an object', null, 'Request decode failed: the request must be an object'],
    [
      'a Target that is not a string',
      { Target: 5, ClientCertURI: uri('web') },
      'Request decode failed: Target must be a string',
    ],
    [
      'a Namespace that is not a string',
      { Target: 'db', Namespace: [], ClientCertURI: uri('web') },
      'Request decode failed: Namespace must be a string',
    ],
    ['no Target', { ClientCertURI: uri('web') }, 'Target service must be specified'],
    [
      'a URI that is not SPIFFE',
      { Target: 'db', ClientCertURI: 'tubes' },
      'ClientCertURI not a valid Connect identifier',
    ],
    [
      'a SPIFFE ID that is not a service',
      { Target: 'db', ClientCertURI: 'spiffe://1234.consul' },
      'ClientCertURI not a valid Service identifier',
    ],
  ])('%s is a 400 before the caller is resolved', (_name, bad, message) => {
    const log: string[] = [];
    expect(failure(() => authorize(everyNamespace, bad as unknown as AuthorizeRequest, lazy(log, caller(log))))).toBe(
      `invalid: ${message}`,
    );
    expect(log).toEqual([]);
  });

  it('then the caller is resolved and needs service:write on the Target (a 403 naming it)', () => {
    const log: string[] = [];
    const err = agentErrorOf(() => authorize(everyNamespace, request, lazy(log, caller(log, { writable: 'other' }))));
    expect([err.kind, err.message]).toEqual([
      'permission-denied',
      `Permission denied: token with AccessorID 'accessor-1' lacks permission 'service:write' on "db"`,
    ]);
    expect(log).toEqual(['resolve', 'service:write db']);
  });

  it('a caller that cannot be resolved (an unknown token) is refused after the checks', () => {
    const unknown = (): Identity => {
      throw new Error('ACL not found');
    };
    expect(failure(() => authorize(everyNamespace, { Target: '', ClientCertURI: uri('web') }, unknown))).toBe(
      'invalid: Target service must be specified',
    );
    expect(() => authorize(everyNamespace, request, unknown)).toThrow('ACL not found');
  });

  it('the partition is checked after the ACL step: a foreign client without service:write gets the 403', () => {
    const foreign = { Target: 'db', ClientCertURI: uri('web', 'default', 'other') };
    expect(agentErrorOf(() => authorize(everyNamespace, foreign, caller([], { writable: 'other' }))).kind).toBe(
      'permission-denied',
    );
    expect(failure(() => authorize(everyNamespace, foreign, caller([])))).toBe(
      'invalid: Mismatched partitions: "other" != "default"',
    );
  });

  it("then the decision: the first matching intention, else the caller's ACL default", () => {
    const d = deps(true, { SourceName: 'web', DestinationName: 'db', Action: 'deny' });
    expect(authorize(d, request, caller([])).decision.result).toEqual({
      Authorized: false,
      Reason: 'Matched L4 intention: default/web => default/db (Precedence: 9, Action: DENY)',
    });
    expect(authorize(d, { Target: 'db', ClientCertURI: uri('api') }, caller([], { defaultAllow: true })).decision).toBe(
      DEFAULT_ALLOW,
    );
    expect(
      authorize(d, { Target: 'db', ClientCertURI: uri('api') }, caller([], { defaultAllow: false })).decision,
    ).toBe(DEFAULT_DENY);
  });

  it('a checked request skips the checks and is decided the same; an identity may be passed resolved', () => {
    const checked = checkAuthorizeRequest({ Target: 'db', ClientCertURI: uri('web'), Namespace: 'body-ns' });
    const direct = authorize(everyNamespace, checked, caller([]));
    expect(direct).toEqual(
      authorize(everyNamespace, { Target: 'db', ClientCertURI: uri('web'), Namespace: 'body-ns' }, caller([])),
    );
    expect(direct.namespace).toBe('body-ns');
    // Connect and the ACL step still apply to a checked request.
    expect(failure(() => authorize(deps(false), checked, caller([])))).toBe(
      'invalid: Connect must be enabled in order to use this endpoint',
    );
    expect(agentErrorOf(() => authorize(everyNamespace, checked, caller([], { writable: 'other' }))).kind).toBe(
      'permission-denied',
    );
  });
});

describe('authorize: the destination namespace', () => {
  const reasonNamespace = (r: ReturnType<typeof authorize>): string =>
    /=> ([^/]+)\/db/.exec(r.decision.result.Reason)?.[1] ?? '';

  it.each([
    ['the request Namespace', 'body-ns', { query: 'query-ns', header: 'header-ns' }, 'token-ns', 'body-ns'],
    ['?ns', '', { query: 'query-ns', header: 'header-ns' }, 'token-ns', 'query-ns'],
    ['the header', '', { query: undefined, header: 'header-ns' }, 'token-ns', 'header-ns'],
    ["the token's namespace", '', { query: '', header: '' }, 'token-ns', 'token-ns'],
    ['default', '', { header: '' }, '', 'default'],
  ])('%s wins over every later step', (_step, body, requested, tokenNs, expected) => {
    const r = authorize(
      everyNamespace,
      { Target: 'db', ClientCertURI: uri('web', 'elsewhere'), Namespace: body },
      caller([], { namespace: tokenNs }),
      requested,
    );
    expect([r.namespace, reasonNamespace(r)]).toEqual([expected, expected]);
  });

  it("without a transport (agent.authorize) the steps are the request Namespace, the token's, default", () => {
    const r = authorize(
      everyNamespace,
      { Target: 'db', ClientCertURI: uri('web') },
      caller([], { namespace: 'token-ns' }),
    );
    expect(r.namespace).toBe('token-ns');
    expect(authorize(everyNamespace, { Target: 'db', ClientCertURI: uri('web') }, caller([])).namespace).toBe(
      'default',
    );
  });
});
