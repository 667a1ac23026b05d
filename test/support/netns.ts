// A network of its own for each etcd member, so that a test can cut one off (a partition: its
// packets dropped, not refused): one Linux network namespace per member, each joined by a veth pair
// to a bridge in this namespace, which holds an address on the same /24 (the agents run here).
// Needs root and iproute2 (scripts/ensure-ip.sh). Names carry this process's pid, so a run never
// touches another live run's namespaces, and those of a run that died are removed first.
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { findUp } from './etcd.js';

const ENSURE_SCRIPT = findUp(import.meta.dirname, 'scripts/ensure-ip.sh');
/** Every name starts so: `svcp<pid>-br`, `svcp<pid>-m<i>` (namespace), `svcp<pid>-h<i>` (veth, bridge side). */
const PREFIX = 'svcp';
const OWNED = new RegExp(`^${PREFIX}(\\d+)-`);
/**
 * The subnets the networks take, 10.231.<n>.0/24: the first not already on a link here, from one
 * picked by pid, so that two runs starting at once rarely try the same one.
 */
const SUBNET_BASE = '10.231';
/** The member side of each veth pair, inside the member's namespace. */
const MEMBER_LINK = 'eth0';

const run = promisify(execFile);

export interface MemberPlace {
  /** The member's address, reachable from this namespace. */
  readonly host: string;
  /** The command prefix that runs a program in the member's namespace. */
  readonly command: readonly string[];
}

export interface MemberNetwork {
  readonly places: readonly MemberPlace[];
  /** Takes member `i`'s link down on both sides: nothing reaches it or leaves it (its process runs on). */
  cut(i: number): Promise<void>;
  /** Brings member `i`'s link back up. */
  heal(i: number): Promise<void>;
  /** Deletes the namespaces and links (processes still inside keep their namespace until they exit). */
  remove(): Promise<void>;
}

export interface MemberNetworkOptions {
  /**
   * Pin this host's neighbour (ARP) entry for each member, as for a member behind a router: a cut
   * then drops every packet silently, SYNs included, where otherwise the neighbour lookup fails
   * within seconds and connection attempts end with "no route to host".
   */
  readonly pinNeighbours?: boolean;
}

/** Creates `size` member namespaces on one bridge; throws (never skips) when that is not possible here. */
export async function createMemberNetwork(size: number, options: MemberNetworkOptions = {}): Promise<MemberNetwork> {
  const ip = await ensureIp();
  await removeStale(ip);
  const tag = `${PREFIX}${process.pid}`;
  const bridge = `${tag}-br`;
  const subnet = `${SUBNET_BASE}.${await freeSubnet(ip)}`;
  const names = Array.from({ length: size }, (_, i) => ({ ns: `${tag}-m${i}`, link: `${tag}-h${i}` }));
  const remove = (): void => removeSync(ip, tag);
  process.once('exit', remove);
  try {
    await run(ip, ['link', 'add', bridge, 'type', 'bridge']);
    await run(ip, ['addr', 'add', `${subnet}.254/24`, 'dev', bridge]);
    await run(ip, ['link', 'set', bridge, 'up']);
    for (const [i, { ns, link }] of names.entries()) {
      await run(ip, ['netns', 'add', ns]);
      await run(ip, ['link', 'add', link, 'type', 'veth', 'peer', 'name', MEMBER_LINK, 'netns', ns]);
      await run(ip, ['link', 'set', link, 'master', bridge, 'up']);
      await run(ip, ['-n', ns, 'addr', 'add', `${subnet}.${i + 1}/24`, 'dev', MEMBER_LINK]);
      await run(ip, ['-n', ns, 'link', 'set', MEMBER_LINK, 'up']);
      await run(ip, ['-n', ns, 'link', 'set', 'lo', 'up']);
      if (options.pinNeighbours === true) {
        const { stdout } = await run(ip, ['-n', ns, '-j', 'link', 'show', MEMBER_LINK], { encoding: 'utf8' });
        const mac = (JSON.parse(stdout) as { address: string }[])[0]!.address;
        const neighbour = ['neigh', 'replace', `${subnet}.${i + 1}`, 'lladdr', mac, 'dev', bridge, 'nud', 'permanent'];
        await run(ip, neighbour);
      }
    }
  } catch (err) {
    remove();
    const message = `cannot build the member network (root and iproute2 needed): ${(err as Error).message}`;
    throw new Error(message, { cause: err });
  }
  const at = (i: number): { ns: string; link: string } => {
    const found = names[i];
    if (found === undefined) throw new Error(`no member ${i} in a network of ${size}`);
    return found;
  };
  const setLinks = async (i: number, state: 'up' | 'down'): Promise<void> => {
    const { ns, link } = at(i);
    await run(ip, ['link', 'set', link, state]);
    await run(ip, ['-n', ns, 'link', 'set', MEMBER_LINK, state]);
  };
  return {
    places: names.map(({ ns }, i) => ({ host: `${subnet}.${i + 1}`, command: [ip, 'netns', 'exec', ns] })),
    cut: (i) => setLinks(i, 'down'),
    heal: (i) => setLinks(i, 'up'),
    async remove() {
      process.off('exit', remove);
      remove();
    },
  };
}

async function ensureIp(): Promise<string> {
  const { stdout } = await run(ENSURE_SCRIPT, [], { encoding: 'utf8' });
  return stdout.trim();
}

/** Namespaces and links of runs whose process is gone (a crashed or killed test run), and what runs inside them. */
async function removeStale(ip: string): Promise<void> {
  const tags = new Set<string>();
  for (const name of [...(await namespaces(ip)), ...(await links(ip))]) {
    const pid = OWNED.exec(name)?.[1];
    if (pid !== undefined && !alive(Number(pid))) tags.add(`${PREFIX}${pid}`);
  }
  for (const tag of tags) {
    for (const ns of (await namespaces(ip)).filter((n) => n.startsWith(`${tag}-`))) {
      // An etcd member of the dead run, still in its namespace: ours, so it goes too.
      const { stdout } = await run(ip, ['netns', 'pids', ns], { encoding: 'utf8' });
      for (const pid of stdout.split('\n').filter((p) => p.trim() !== '')) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // Exited meanwhile.
        }
      }
    }
    removeSync(ip, tag);
  }
}

/** Synchronous, so that it also runs from an `exit` handler. Deleting a namespace deletes its veth pairs. */
function removeSync(ip: string, tag: string): void {
  const quiet = { stdio: 'ignore' as const };
  const list = (args: string[]): string[] => {
    try {
      return execFileSync(ip, args, { encoding: 'utf8' })
        .split('\n')
        .map((line) => nameOf(line))
        .filter((n) => n.startsWith(`${tag}-`));
    } catch {
      return [];
    }
  };
  for (const ns of list(['netns', 'list'])) {
    try {
      execFileSync(ip, ['netns', 'del', ns], quiet);
    } catch {
      // Gone already.
    }
  }
  for (const link of list(['-o', 'link', 'show'])) {
    try {
      execFileSync(ip, ['link', 'del', link], quiet);
    } catch {
      // Gone with its namespace.
    }
  }
}

async function namespaces(ip: string): Promise<string[]> {
  const { stdout } = await run(ip, ['netns', 'list'], { encoding: 'utf8' });
  return stdout.split('\n').map(nameOf).filter(Boolean);
}

async function links(ip: string): Promise<string[]> {
  const { stdout } = await run(ip, ['-o', 'link', 'show'], { encoding: 'utf8' });
  return stdout.split('\n').map(nameOf).filter(Boolean);
}

/** The name in a line of `ip netns list` ("name (id: 3)") or `ip -o link show` ("4: name@peer: <…>"). */
function nameOf(line: string): string {
  const linkLine = /^\d+:\s+([^:@\s]+)/.exec(line);
  if (linkLine) return linkLine[1] as string;
  return line.trim().split(/\s+/)[0] ?? '';
}

async function freeSubnet(ip: string): Promise<number> {
  const { stdout } = await run(ip, ['-o', '-4', 'addr', 'show'], { encoding: 'utf8' });
  for (let k = 0; k < 255; k++) {
    const n = (process.pid + k) % 255;
    if (!stdout.includes(` ${SUBNET_BASE}.${n}.`)) return n;
  }
  throw new Error(`every subnet ${SUBNET_BASE}.0-254.0/24 is taken`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
