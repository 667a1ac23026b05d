// etcd's users and roles exactly as docs/cluster-security.md gives them (the same etcdctl commands,
// passwords aside): a test that runs with RBAC on calls this once on a fresh cluster.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { EtcdConnectionOptions } from '../../src/state/etcd/index.js';
import { ensureEtcd, type EtcdCluster } from './etcd.js';

/** etcdctl beside the etcd binary, or undefined when the machine has none. */
export async function findEtcdctl(): Promise<string | undefined> {
  const candidate = join(dirname(await ensureEtcd()), 'etcdctl');
  if (existsSync(candidate)) return candidate;
  return existsSync('/usr/bin/etcdctl') ? '/usr/bin/etcdctl' : undefined;
}

/** The etcd user of the client agent whose node_name is `node` (docs/cluster-security.md: one per client agent). */
export function clientUser(node: string): string {
  return `svc-client-${node}`;
}

/**
 * docs/cluster-security.md's commands for `prefix`, with user svc-server-1 and one user per client
 * agent node in `clientNodes` (clientUser); then auth on.
 */
export async function enableDocumentedRbac(
  cluster: EtcdCluster,
  etcdctl: string,
  prefix: string,
  clientNodes: readonly string[] = ['client-1'],
): Promise<void> {
  const ctl = (...args: string[]) =>
    promisify(execFile)(etcdctl, [`--endpoints=${cluster.endpoints.join(',')}`, ...args], {
      env: { ...process.env, ETCDCTL_API: '3' },
    });
  await ctl('user', 'add', 'root:root-pw', '--interactive=false');
  await ctl('role', 'add', 'svc-server');
  await ctl('role', 'grant-permission', 'svc-server', '--prefix=true', 'readwrite', prefix);
  await ctl('role', 'add', 'svc-client');
  await ctl('role', 'grant-permission', 'svc-client', 'read', `${prefix}data/`, `${prefix}meta0`);
  await ctl('role', 'grant-permission', 'svc-client', '--prefix=true', 'read', `${prefix}bulk/`);
  await ctl('role', 'grant-permission', 'svc-client', '--prefix=true', 'write', `${prefix}sign/`);
  await ctl('role', 'grant-permission', 'svc-client', '--prefix=true', 'read', `${prefix}sign/responses/`);
  await ctl('role', 'grant-permission', 'svc-client', '--prefix=true', 'read', `${prefix}sign/acl/responses/`);
  await ctl('role', 'grant-permission', 'svc-client', '--prefix=true', 'read', `${prefix}sign/writes/responses/`);
  await ctl('user', 'add', 'svc-server-1:svc-server-1-pw', '--interactive=false');
  await ctl('user', 'grant-role', 'svc-server-1', 'svc-server');
  for (const node of clientNodes) {
    const user = clientUser(node);
    await ctl('role', 'add', user);
    await ctl('role', 'grant-permission', user, 'readwrite', `${prefix}members/${node}`);
    await ctl('user', 'add', `${user}:${user}-pw`, '--interactive=false');
    await ctl('user', 'grant-role', user, 'svc-client');
    await ctl('user', 'grant-role', user, user);
  }
  await ctl('auth', 'enable');
}

/** The connection options of one of the documented users. */
export function asUser(cluster: EtcdCluster, username: string): EtcdConnectionOptions {
  return { endpoints: cluster.endpoints, auth: { username, password: `${username}-pw` } };
}
