// A client agent's anti-entropy write: it may not write the shared view (docs/decisions.md D25), so
// it plans from its view what its node lacks and sends the catalog register and deregister
// requests a Consul agent would, which a server runs with the agent's token (docs/decisions.md D26).
import type { StateStore } from '../state/types.js';
import { CATALOG_INDEX, nodeIndexKey } from './model.js';
import { readNodeState } from './node-state.js';
import type { Deregistration, Registration } from './register.js';
import { nodeRow, syncRequests, syncTarget, type NodeSync, type SyncScope } from './sync.js';

/** PUT /v1/catalog/register and /deregister, as the agent's own calls (rejected when refused). */
export interface CatalogRequests {
  register(reg: Registration): Promise<void>;
  deregister(dereg: Deregistration): Promise<void>;
}

export class ForwardedNodeSync {
  constructor(
    private readonly view: Pick<StateStore, 'get' | 'list'>,
    private readonly datacenter: string,
    private readonly requests: CatalogRequests,
  ) {}

  /** The index of the last write to node `name`'s entries, as this agent's view has it. */
  nodeVersion(name: string): number {
    return this.view.get(CATALOG_INDEX, nodeIndexKey(name))?.modifyIndex ?? 0;
  }

  /** Sends what node `name` needs to hold `desired`; resolves to the number of requests sent. */
  async syncNode(name: string, desired: NodeSync, scope?: SyncScope): Promise<number> {
    const current = readNodeState(this.view, name);
    const target = syncTarget(nodeRow(name, this.datacenter, desired.node), current, desired, scope);
    const { registrations, deregistrations } = syncRequests(name, current, target);
    // The node first (a service needs it), removals before additions, as Consul's syncChanges orders
    // them; a request refused (a service the token may not write) does not hold back the others.
    const [node, ...rest] = registrations;
    const nodeFirst = node !== undefined && !node.SkipNodeUpdate;
    if (nodeFirst) await this.requests.register(node);
    let refused: unknown;
    const send = async (request: Promise<void>): Promise<void> => {
      await request.catch((err: unknown) => (refused ??= err));
    };
    for (const dereg of deregistrations) await send(this.requests.deregister(dereg));
    for (const reg of nodeFirst ? rest : registrations) await send(this.requests.register(reg));
    if (refused !== undefined) throw refused;
    return registrations.length + deregistrations.length;
  }
}
