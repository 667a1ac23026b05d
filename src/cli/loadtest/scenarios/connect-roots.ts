// The check every Connect scenario makes first: the target serves the agent's CA roots.
import { ClientError, type ApiClient } from '../../client/api.js';

export interface CaRoots {
  readonly ActiveRootID: string;
  readonly TrustDomain: string;
  readonly Roots: readonly { readonly ID: string; readonly RootCert: string }[];
}

export async function connectRoots(api: ApiClient): Promise<CaRoots> {
  const roots = await api.call('GET', '/v1/agent/connect/ca/roots');
  if (roots.status !== 200)
    throw new ClientError(
      'CLI_LOADTEST_TARGET',
      `The target does not serve /v1/agent/connect/ca/roots (${roots.status}: ${roots.text.trim()}): is Connect enabled on it?`,
    );
  return JSON.parse(roots.text) as CaRoots;
}
