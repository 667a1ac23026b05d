// A client agent's anti-entropy requests carry the token each one's service calls for
// (docs/decisions.md#agent-token-kinds): the node's and removals the agent token, a service's
// registration the token the agent picks for that service (a config file's: its registration token).
import { describe, expect, it } from 'vitest';
import { seal } from '../../../src/acl/sealed.js';
import type { Registration } from '../../../src/catalog/register.js';
import type { ForwardedWrite } from '../../../src/http/forward.js';
import { forwardedCatalogRequests } from '../../../src/http/forwarded-catalog.js';

const reg = (service?: string): Registration => ({
  Datacenter: 'dc1',
  ID: '',
  Node: 'n1',
  Address: '127.0.0.1',
  TaggedAddresses: {},
  NodeMeta: {},
  ...(service === undefined ? {} : { Service: { ID: service, Service: service } }),
  Checks: [],
  SkipNodeUpdate: service !== undefined,
});

describe('forwardedCatalogRequests', () => {
  it("sends each registration with its service's token, and the node's and removals with the agent's", async () => {
    const sent: [string, string][] = [];
    const forward = (write: ForwardedWrite): Promise<unknown> => {
      sent.push([write.Path, write.Token]);
      return Promise.resolve(seal({ Status: 200, Headers: [] }, write.ReplyKey));
    };
    const tokenFor = (serviceId?: string): string | undefined =>
      serviceId === 'from-file' ? 'file-token' : serviceId === undefined ? 'agent-token' : undefined;
    const requests = forwardedCatalogRequests(forward, tokenFor);
    await requests.register(reg());
    await requests.register(reg('from-file'));
    await requests.register(reg('from-api'));
    await requests.deregister({ Datacenter: 'dc1', Node: 'n1', ServiceID: 'from-file', CheckID: '' });
    expect(sent).toEqual([
      ['/v1/catalog/register', 'agent-token'],
      ['/v1/catalog/register', 'file-token'],
      ['/v1/catalog/register', ''],
      ['/v1/catalog/deregister', 'agent-token'],
    ]);
  });
});
