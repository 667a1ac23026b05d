// The mesh source of a service embedded with its agent (createAgent() in the same process): the
// leaf, the roots, authorize and the instances to dial are read from the agent's own objects, with
// no HTTP request. The leaf asks the token's service:write as GET /v1/agent/connect/ca/leaf does.
import { INTENTIONS_TABLE } from '../connect/intentions/model.js';
import { ANONYMOUS_SECRET } from '../acl/builtin.js';
import { requirePermission, type Identity } from '../acl/identity.js';
import type { CatalogQueries } from '../catalog/queries.js';
import type { AuthorizeRequest, AuthorizeResult } from '../connect/authorize.js';
import type { CachedLeaf, LeafManager } from '../connect/ca/leaf-manager.js';
import type { RootsCache } from '../connect/ca/roots-cache.js';
import type { RootsSnapshot } from '../connect/ca/roots-view.js';
import { pauseAfterFailure, type Unwatch } from './blocking-watch.js';
import { type Decision, type Instance, type Leaf, type MeshSource, type Roots } from './mesh-source.js';

/** What the SDK reads of an agent built by createAgent() in the same process (its Agent has all of it). */
export interface EmbeddedAgent {
  readonly ca: { readonly leaves: LeafManager; readonly roots: RootsCache } | undefined;
  readonly acl: { resolve(secret: string): Identity };
  readonly catalog: CatalogQueries;
  /** The agent's state: its intentions table is watched for changes. */
  readonly store: { watchOnce(target: { readonly table: string }, fn: () => void): () => void };
  authorize(request: AuthorizeRequest, token?: string): AuthorizeResult;
}

const NAMESPACE = 'default';

export class InProcessMeshSource implements MeshSource {
  private readonly stops = new Set<Unwatch>();

  constructor(
    private readonly agent: EmbeddedAgent,
    private readonly token?: string,
  ) {}

  watchLeaf(service: string, onLeaf: (leaf: Leaf) => void, onError: (err: Error) => void): Unwatch {
    const ca = this.connect();
    let stopped = false;
    let cancelWait = (): void => {};
    const loop = async (): Promise<void> => {
      let index = 0;
      let failures = 0;
      while (!stopped) {
        try {
          requirePermission(this.agent.acl.resolve(this.token ?? ANONYMOUS_SECRET), 'service', 'write', service);
          const wait = ca.leaves.waitFor(NAMESPACE, service, index, this.token);
          if (wait !== undefined) await new Promise<void>((resolve) => (cancelWait = wait.watchOnce(resolve)));
          if (stopped) return;
          const { leaf } = await ca.leaves.get(NAMESPACE, service, this.token);
          failures = 0;
          if (leaf.index !== index) onLeaf(toLeaf(leaf));
          index = leaf.index;
        } catch (err) {
          if (stopped) return;
          onError(err instanceof Error ? err : new Error(String(err)));
          await pauseAfterFailure(failures++);
        }
      }
    };
    void loop();
    return this.track(() => {
      stopped = true;
      cancelWait();
    });
  }

  watchRoots(onRoots: (roots: Roots) => void, onError: (err: Error) => void): Unwatch {
    const roots = this.connect().roots;
    try {
      onRoots(toRoots(roots.get().snapshot));
    } catch (err) {
      onError(err instanceof Error ? err : new Error(String(err)));
    }
    return this.track(roots.subscribe((snapshot) => onRoots(toRoots(snapshot))));
  }

  authorize(target: string, clientUri: string, clientSerial: string): Promise<Decision> {
    try {
      const result = this.agent.authorize(
        { Target: target, ClientCertURI: clientUri, ClientCertSerial: clientSerial },
        this.token,
      );
      return Promise.resolve({ authorized: result.Authorized, reason: result.Reason });
    } catch (err) {
      return Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
  }

  watchIntentions(_target: string, onChange: () => void): Unwatch {
    let cancel = (): void => {};
    const arm = (): void => {
      cancel = this.agent.store.watchOnce({ table: INTENTIONS_TABLE }, () => {
        arm();
        onChange();
      });
    };
    arm();
    return this.track(() => cancel());
  }

  instances(service: string): Promise<Instance[]> {
    const catalog = this.agent.catalog;
    const passing = catalog
      .withChecks(catalog.instances(service, true))
      .filter((instance) => instance.checks.every((check) => check.value.Status === 'passing'));
    return Promise.resolve(
      passing.map(({ node, service: own }) => ({
        address: own.value.Address || node.value.Address,
        port: own.value.Port,
      })),
    );
  }

  close(): void {
    for (const stop of [...this.stops]) stop();
  }

  private connect(): NonNullable<EmbeddedAgent['ca']> {
    const ca = this.agent.ca;
    if (ca === undefined) throw new Error('the agent runs without Connect (connect.enabled is false)');
    return ca;
  }

  private track(stop: () => void): Unwatch {
    const tracked = (): void => {
      stop();
      this.stops.delete(tracked);
    };
    this.stops.add(tracked);
    return tracked;
  }
}

function toLeaf(leaf: CachedLeaf): Leaf {
  return {
    certPem: leaf.certPem,
    keyPem: leaf.privateKeyPem,
    serviceUri: leaf.uri,
    serial: leaf.serialNumber,
    validBefore: new Date(leaf.validBefore),
  };
}

function toRoots(snapshot: RootsSnapshot): Roots {
  return {
    trustDomain: snapshot.trustDomain,
    pems: snapshot.roots.flatMap((row) => [row.value.RootCert, ...(row.value.IntermediateCerts ?? [])]),
  };
}
