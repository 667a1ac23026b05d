// What differs between the agent's three roles (docs/decisions.md D25): a lone agent keeps its state
// in the embedded store; a cluster server shares etcd, holds the CA key and token secrets and runs
// client agents' writes; a cluster client shares etcd and asks a server for all three. The role is
// chosen once (choose-role.ts) and each role's file wires its parts; nothing else asks which it is.
import type { TokenSecrets } from '../acl/secrets.js';
import type { Catalog } from '../catalog/catalog.js';
import type { CatalogQueries } from '../catalog/queries.js';
import type { ClusterState } from '../cluster/open.js';
import type { CertificateAuthority } from '../connect/ca/authority.js';
import type { ServerCaOptions } from '../connect/ca/server-ca.js';
import type { PoolSigner } from '../connect/ca/pool-signer.js';
import type { Identity } from '../acl/identity.js';
import type { LeaderContact } from '../http/brand.js';
import type { Route } from '../http/route-types.js';
import type { CompiledRoute } from '../http/routes.js';
import type { NodeWriter } from '../local/anti-entropy.js';
import type { SessionLeases } from '../sessions/leases.js';
import type { StateStore } from '../state/types.js';

export type RoleName = 'lone' | 'cluster server' | 'cluster client';

/** What the CA of any role is built from; a role adds its own parts (etcd, the leaf check). */
export type CaBase = Omit<ServerCaOptions, 'custody'>;

/** The role's CA, with what it alone knows of it. */
export interface RoleCa {
  readonly ca: CertificateAuthority;
  /** A cluster agent keeps its leaves beside its etcd view (it answers them while etcd is down). */
  readonly keepsLeaves: boolean;
  close(): void;
}

/** Whether a caller's token may have a leaf for the service (the checks of the local endpoint; docs/decisions.md D24). */
export type LeafCheck = (token: string | undefined, service: string) => void;

/** The route groups whose writes change shared state: a client sends them to a server, a server runs other agents'. */
export type WriteGroups = readonly (readonly Route[])[];

export interface Role {
  readonly name: RoleName;
  /** Where shared state lives: the embedded store, or the view of etcd. */
  readonly store: StateStore;
  /** Membership and etcd leadership; undefined for a lone agent. */
  readonly cluster: ClusterState | undefined;
  /** What the X-*-KnownLeader and LastContact headers report. */
  readonly contact: LeaderContact;
  /** Where token secrets live outside the rows (docs/decisions.md D23); undefined keeps them in the rows. */
  readonly secrets: TokenSecrets | undefined;
  /**
   * Sets up the ACL system (ACLs enabled): `writeFirstRows` makes its first rows where this agent
   * writes shared rows itself; `resolve` checks a caller's token where a server answers others.
   */
  setUpAcl(writeFirstRows: () => Promise<void>, resolve: (secret: string) => Identity): Promise<void>;
  /**
   * Puts the agent's own node in the catalog where it writes shared rows itself; a cluster's client
   * agent writes nothing itself (docs/decisions.md D25): the servers register it.
   */
  registerSelf(register: () => Promise<void>): Promise<void>;
  /** Starts what keeps other nodes' health (a server's liveness reconciler) once the agent's own node is in. */
  maintainCatalog(catalog: Catalog, queries: CatalogQueries, selfRegistered: Promise<void>): void;
  /**
   * Where TTL sessions' leases live (a lone agent's timers, which end a session through `expired`;
   * etcd's on a server); undefined on a client agent, whose session writes a server runs.
   */
  sessionLeases(expired: (lease: string) => void): SessionLeases | undefined;
  /** Opens the CA as this role holds it. */
  openCa(base: CaBase, pool: PoolSigner, authorizeLeaf: LeafCheck): Promise<RoleCa>;
  /**
   * Who writes the agent's own services and checks into the catalog (docs/decisions.md D26);
   * `syncToken` is the token a request carries, by the service it registers (none: the node's).
   */
  catalogWriter(catalog: Catalog, syncToken: (serviceId?: string) => string | undefined): NodeWriter;
  /** The route group as this role serves it: a client forwards its writes to a server. */
  writesThrough(group: readonly Route[], defaultToken: () => string | undefined): readonly Route[];
  /** A server runs other agents' forwarded writes through these groups, behind its own ACL gate. */
  serveWrites(groups: WriteGroups, compile: (groups: WriteGroups) => CompiledRoute[]): void;
  /**
   * Leaves the cluster gracefully (PUT /v1/agent/leave): a cluster agent says so in its member entry
   * and resolves once the servers deregistered its node (or after a wait); a lone agent has no one to
   * tell (docs/decisions.md#departed-members). The entry itself goes at closeState().
   */
  leave(): Promise<void>;
  /**
   * PUT /v1/agent/force-leave where it runs: a server's liveness reconciler, or a lone agent (its
   * only member is itself); undefined on a client agent, which forwards it to a server.
   */
  readonly forceLeave: ((node: string, prune: boolean) => Promise<void>) | undefined;
  /** Resolves when the agent may take requests (a lone agent waits for its node in the catalog). */
  readyToListen(selfRegistered: Promise<void>): Promise<void>;
  /** Records the port the agent bound. */
  listening(port: number): Promise<void>;
  /** Closes the role's own parts (mailboxes, reconcilers); the store stays open. */
  closeParts(): void;
  /** Leaves the cluster and closes the store, last. */
  closeState(): Promise<void>;
}
