// Watches etcd refuses as it creates them (a range the user may not read): each is told so once,
// and the watches asked after it on the same stream are still created and get their events
// (etcd3 1.1.2 kept a refused watch at the head of its create queue, and no later watch was ever
// created). The refusal for an expired token is test/cluster/auth-token-expiry.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectEtcd, type EtcdConnection, type EtcdWatchListener } from '../../src/state/etcd/etcd-client.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { putKey } from './etcd-put.js';

const ROOT_PASSWORD = 'refused-root-pw';

/** `event`, or a failure that says what the watches were told, if it has not come in 20 s (it takes milliseconds). */
function within(event: Promise<void>, what: string, told: readonly string[]): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, fail) => {
    timer = setTimeout(
      () => fail(new Error(`${what} did not happen; the watches were told: ${told.join('; ')}`)),
      20_000,
    );
  });
  return Promise.race([event, late]).finally(() => clearTimeout(timer));
}

describe('a watch etcd refuses at creation', () => {
  let etcd: EtcdCluster;
  let client: EtcdConnection;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ size: 1 });
    await etcd.enableAuth(ROOT_PASSWORD);
    await etcd.etcdctl('role', 'add', 'ok-only');
    await etcd.etcdctl('role', 'grant-permission', 'ok-only', '--prefix=true', 'readwrite', '/ok/');
    await etcd.etcdctl('user', 'add', 'limited:limited-pw');
    await etcd.etcdctl('user', 'grant-role', 'limited', 'ok-only');
    client = connectEtcd({ endpoints: etcd.endpoints, auth: { username: 'limited', password: 'limited-pw' } });
  }, 60_000);
  afterAll(async () => {
    client?.close();
    await etcd?.stop();
  });

  const put = (key: string): Promise<number> => putKey(client, key);

  it('is cancelled, and watches asked after it are created and get events', async () => {
    const told: string[] = [];
    // From a revision, not from now: the writes below may land before the watches are created.
    const from = (await put('/ok/start')) + 1;
    const watch = (prefix: string, extra: Partial<EtcdWatchListener> = {}): void => {
      client.watchRange(Buffer.from(prefix), Buffer.from(`${prefix}\xff`), from, {
        connected: () => told.push(`${prefix} connected`),
        events: (evs) => told.push(...evs.map((ev) => `${prefix} ${ev.kv.key}`)),
        disconnected: (err) => told.push(`${prefix} disconnected ${String(err)}`),
        cancelled: (err) => told.push(`${prefix} cancelled ${String(err)}`),
        ...extra,
      });
    };
    let refused: () => void = () => {};
    const wasRefused = new Promise<void>((done) => (refused = done));
    watch('/ok/a/');
    watch('/secret/', {
      cancelled: (err) => {
        told.push(`/secret/ cancelled ${String(err)}`);
        refused();
      },
    });
    let bothSaw: () => void = () => {};
    const sawBoth = new Promise<void>((done) => (bothSaw = done));
    const seen = new Set<string>();
    const counting = (prefix: string): Partial<EtcdWatchListener> => ({
      events: (evs) => {
        for (const ev of evs) told.push(`${prefix} ${ev.kv.key}`);
        seen.add(prefix);
        if (seen.size === 2) bothSaw();
      },
    });
    watch('/ok/b/', counting('/ok/b/'));
    watch('/ok/c/', counting('/ok/c/'));
    await within(wasRefused, 'the refusal', told);
    await put('/ok/b/1');
    await put('/ok/c/1');
    await within(sawBoth, 'both events reaching the watches asked after the refused one', told);
    expect(told.filter((t) => t.startsWith('/secret/'))).toEqual([
      expect.stringMatching(/^\/secret\/ cancelled .*permission denied/) as string,
    ]);
    expect(told.filter((t) => !t.startsWith('/secret/')).sort()).toEqual([
      '/ok/a/ connected',
      '/ok/b/ /ok/b/1',
      '/ok/b/ connected',
      '/ok/c/ /ok/c/1',
      '/ok/c/ connected',
    ]);
  });
});
