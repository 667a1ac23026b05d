// A client agent's own catalog calls for anti-entropy (docs/decisions.md D26): PUT /v1/catalog/register
// and /deregister of its node, sent through the write mailbox as any write it takes (docs/decisions.md D25),
// carrying the agent's token (a config-file service's registration: the config-file registration
// token, docs/decisions.md#agent-token-kinds), so that a server checks them against its ACLs.
import type { CatalogRequests } from '../catalog/forwarded-sync.js';
import { agentError } from '../core/errors.js';
import { forwardedCall, type ForwardedWrite } from './forward.js';

export function forwardedCatalogRequests(
  forward: (write: ForwardedWrite) => Promise<unknown>,
  token: (serviceId?: string) => string | undefined,
): CatalogRequests {
  const send = async (path: string, body: unknown, serviceId?: string): Promise<void> => {
    const reply = await forwardedCall(forward, {
      Method: 'PUT',
      Path: path,
      Query: '',
      Token: token(serviceId) ?? '',
      Namespace: '',
      Body: Buffer.from(JSON.stringify(body)).toString('base64'),
    });
    if (reply.status === 200) return;
    const said = reply.body ?? '';
    const text = (typeof said === 'string' ? said : Buffer.from(said).toString('utf8')).trim();
    throw agentError('CLUSTER_FORWARD_FAILED', { detail: `PUT ${path}: ${reply.status} ${text}` });
  };
  return {
    register: (reg) => send('/v1/catalog/register', reg, reg.Service?.ID),
    deregister: (dereg) => send('/v1/catalog/deregister', dereg),
  };
}
