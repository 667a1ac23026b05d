// An etcd member cut off behind a router (its packets dropped silently, SYNs included) until a
// connection attempt to it waits on a late SYN retransmission (the fifth goes 31 s after the first
// SYN, the sixth 32 s later): once the link is back, the client must use the member again within
// seconds, not when that attempt's next SYN goes. Calls go on throughout; the other two members keep
// a quorum, so every one must succeed (each counts once).
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectEtcd, type EtcdConnection } from '../../src/state/etcd/etcd-client.js';
import { recordingLogger, type LogEntry } from '../support/recording-logger.js';
import { startEtcdCluster, type EtcdCluster } from '../support/etcd.js';
import { createMemberNetwork, type MemberNetwork } from '../support/netns.js';

const run = promisify(execFile);

/** The heal comes once an attempt to the member has its next SYN this far off. */
const NEXT_SYN_MS = 25_000;
/** Used again within this of the heal; on that attempt the wait would be at least NEXT_SYN_MS. */
const BACK_WITHIN_MS = 20_000;
const CALL_DEADLINE_MS = 3_000;
const BACK = 'etcd member answers again';
const GOING = 'etcd member not answering; using the other members';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * How far off the latest next SYN of any connection attempt from this host to `host` is, from ss's
 * timer field (`timer:(on,1min3sec,6)`, `25sec`, `1.988ms` for 1,988 ms, `200ms`).
 */
async function latestSynTo(host: string): Promise<number> {
  const { stdout } = await run('ss', ['-tnoH', 'state', 'syn-sent', 'dst', host], { encoding: 'utf8' });
  const timers = [...stdout.matchAll(/timer:\(on,(?:(\d+)min)?(?:(\d+)(?:sec|\.))?(?:(\d+)ms)?,\d+\)/g)];
  const ms = timers.map(
    ([, min, sec, milli]) => Number(min ?? 0) * 60_000 + Number(sec ?? 0) * 1_000 + Number(milli ?? 0),
  );
  return Math.max(0, ...ms);
}

/**
 * Forgets what this host learnt of `host`'s round trip, so that a new attempt's SYNs go 1 s apart,
 * doubling, as to a host never reached (a fast link's cached RTT would space them 200 ms apart).
 */
async function forgetRoundTrip(host: string): Promise<void> {
  await run('ip', ['tcp_metrics', 'delete', host]).catch(() => {});
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(100);
  }
}

describe('an etcd member cut off behind a router', () => {
  let network: MemberNetwork;
  let etcd: EtcdCluster;
  let client: EtcdConnection;
  const entries: LogEntry[] = [];

  beforeAll(async () => {
    network = await createMemberNetwork(3, { pinNeighbours: true });
    etcd = await startEtcdCluster({ size: 3, places: network.places });
    client = connectEtcd({ endpoints: etcd.members.map((m) => m.clientUrl), log: recordingLogger(entries) });
  }, 60_000);

  afterAll(async () => {
    client?.close();
    for (const i of etcd?.members.keys() ?? []) await network.heal(i);
    await etcd?.stop();
    await network?.remove();
  });

  it('is used again within seconds of the heal, however late its pending SYN', async () => {
    await etcd.waitHealthy();
    const leader = await etcd.leader();
    const index = etcd.members.findIndex((m) => m !== leader);
    const host = new URL(etcd.members[index]!.clientUrl).hostname;
    const said = (msg: string): boolean => entries.some((e) => e.msg === msg && String(e.obj.member).includes(host));

    let calling = true;
    const tally = { calls: 0, failures: [] as string[] };
    const calls = (async () => {
      for (let i = 0; calling; i++) {
        tally.calls++;
        await client.getKey(Buffer.from(`/reconnect/${i % 10}`), CALL_DEADLINE_MS).catch((err: unknown) => {
          tally.failures.push(String(err));
        });
        await sleep(20);
      }
    })();

    try {
      await network.cut(index);
      await waitFor(`the client gives up on ${host}`, () => said(GOING), 60_000);
      const late = async (): Promise<boolean> => {
        await forgetRoundTrip(host);
        return (await latestSynTo(host)) >= NEXT_SYN_MS;
      };
      await waitFor(`an attempt to ${host} with its next SYN ${NEXT_SYN_MS} ms off`, late, 120_000);
    } finally {
      await network.heal(index);
    }
    const healed = Date.now();
    await waitFor(`${host} used again`, () => said(BACK), BACK_WITHIN_MS).finally(() => (calling = false));
    console.log(`back after ${Date.now() - healed} ms; calls ${tally.calls}`);
    await calls;
    expect(tally.failures).toEqual([]);
  }, 240_000);
});
