// One etcd client shared by an agent's parts: each part closes its own handle, and the client
// closes with the last one, never before and never twice.
import { describe, expect, it } from 'vitest';
import { shareConnection, type EtcdConnection } from '../../../../src/state/etcd/etcd-client.js';

function fakeClient(): { client: EtcdConnection; closes: () => number; calls: string[] } {
  let closes = 0;
  const calls: string[] = [];
  const client = {
    close: () => {
      closes++;
    },
    status: (deadlineMs: number) => {
      calls.push(`status ${deadlineMs}`);
      return Promise.resolve({ memberId: '1', leaderId: '1', alarms: [] });
    },
  } as unknown as EtcdConnection;
  return { client, closes: () => closes, calls };
}

describe('shareConnection', () => {
  it('closes the client when the last handle closes, however often a handle is closed', () => {
    const { client, closes } = fakeClient();
    const handles = shareConnection(client);
    const [store, members, signing] = [handles(), handles(), handles()];
    store.close();
    store.close();
    members.close();
    expect(closes()).toBe(0);
    signing.close();
    expect(closes()).toBe(1);
  });

  it('passes calls through to the one client', async () => {
    const { client, calls } = fakeClient();
    const handle = shareConnection(client)();
    expect(await handle.status(600)).toEqual({ memberId: '1', leaderId: '1', alarms: [] });
    expect(calls).toEqual(['status 600']);
  });
});
