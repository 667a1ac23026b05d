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

/** docs/cluster-security.md's commands for `prefix`, with users svc-server-1 and svc-client-1; then auth on. */
export async function enableDocumentedRbac(cluster: EtcdCluster, etcdctl: string, prefix: string): Promise<void> {
  const ctl = (...args: string[]) =>
    promisify(execFile)(etcdctl, [`--endpoints=${cluster.endpoints.join(',')}`, ...args], {
      env: { ...process.env, ETCDCTL_API: '3' },
    });
  await ctl('user', 'add', 'root:root-pw', '--interactive=false');
  await ctl('role', 'add', 'svc-server');
  await ctl('role', 'grant-permission', 'svc-server', '--prefix=true', 'readwrite', prefix);
  await ctl('role', 'add', 'svc-client');
  await ctl('role', 'grant-permission', 'svc-client', 'readwrite', `${prefix}data/`, `${prefix}meta0`);
  await ctl('role', 'grant-permission', 'svc-client', '--prefix=true', 'readwrite', `${prefix}bulk/`);
  await ctl('role', 'grant-permission', 'svc-client', '--prefix=true', 'write', `${prefix}sign/`);
  await ctl('role', 'grant-permission', 'svc-client', '--prefix=true', 'read', `${prefix}sign/responses/`);
  await ctl('role', 'grant-permission', 'svc-client', '--prefix=true', 'read', `${prefix}sign/acl/responses/`);
  await ctl('user', 'add', 'svc-server-1:svc-server-1-pw', '--interactive=false');
  await ctl('user', 'grant-role', 'svc-server-1', 'svc-server');
  await ctl('user', 'add', 'svc-client-1:svc-client-1-pw', '--interactive=false');
  await ctl('user', 'grant-role', 'svc-client-1', 'svc-client');
  await ctl('auth', 'enable');
}

/** The connection options of one of the documented users. */
export function asUser(cluster: EtcdCluster, username: string): EtcdConnectionOptions {
  return { endpoints: cluster.endpoints, auth: { username, password: `${username}-pw` } };
}
