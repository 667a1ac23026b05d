// Helpers of the HTTP unit tests: ApiRequest objects built from a RequestHead literal, and a
// logger that records what it is given.
import { aclNotFound } from '../../../src/acl/errors.js';
import { UNRESOLVED_IDENTITY, type Identity } from '../../../src/acl/identity.js';
import type { Authorizer } from '../../../src/acl/types.js';
import type { AclGate } from '../../../src/http/guard.js';
import { requestToken } from '../../../src/http/token.js';
import { ApiRequest, type RequestHead } from '../../../src/http/request.js';

export function head(overrides: Partial<RequestHead> = {}): RequestHead {
  return {
    method: 'GET',
    path: '/v1/kv/x',
    rawQuery: '',
    tokenHeader: '',
    authorization: '',
    namespaceHeader: '',
    closeConnection: false,
    ...overrides,
  };
}

export function request(overrides: Partial<RequestHead> = {}, rest = '', body?: Buffer): ApiRequest {
  return new ApiRequest(head(overrides), rest, body);
}

export { recordingLogger, type RecordingLogger } from '../../support/recording-logger.js';

/** Resolves after pending setImmediate callbacks (the store's watch deliveries) have run. */
export const nextMacrotask = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A gate whose tokens are plain names: the secret "w:<resource>" grants write on that resource,
 * "r:<resource>" read; an empty request token is the anonymous token; "unknown" is not found.
 */
export function testGate(enabled = true): AclGate {
  const identity = (secret: string): Identity => {
    if (secret === 'unknown') throw aclNotFound();
    const [level, resource] = secret.split(':');
    const authorizer: Authorizer = {
      allowed: (r, access) => r === resource && (level === 'w' || access === 'read'),
      keyWritePrefix: () => false,
      anyAllowed: () => false,
      allAllowed: () => false,
      defaultAllow: false,
    };
    return { authorizer, accessorId: `accessor-of-${secret}`, anonymous: secret === 'anonymous', namespace: 'default' };
  };
  return {
    enabled,
    identify: (req) => identity(requestToken(req) ?? 'anonymous'),
    unresolved: UNRESOLVED_IDENTITY,
  };
}
