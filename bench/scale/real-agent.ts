// The harness's real agent processes (the built CLI, dist/src/cli/main.js): the server agents the
// in-process client instances forward their writes to, and a few client agents with the same
// registrations as an instance. Their views are waited on through Consul's blocking queries.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findUp } from '../../test/support/etcd.js';
import { freePort, LOOPBACK, waitForPort } from '../support/ports.js';
import { checkId, wallMs } from './protocol.js';

/** The built CLI, found from this file whether it runs from bench/ (vitest) or compiled. */
export const AGENT_MAIN = builtFile('src/cli/main.js');
const START_TIMEOUT_MS = 60_000;
/** A blocking query's wait: the harness's own limit ends a longer wait. */
const BLOCK_WAIT_S = 10;

export interface RealAgentSpec {
  readonly name: string;
  readonly server: boolean;
  readonly endpoints: readonly string[];
  readonly prefix: string;
  readonly memberTtl: string;
  readonly probeInterval: string;
  /** Services registered from its config file, each with one TTL check, as an instance's. */
  readonly services: number;
}

export interface RealAgent {
  readonly name: string;
  readonly server: boolean;
  readonly pid: number;
  readonly url: string;
  /** SIGTERM: a graceful stop (its member lease revoked); resolves once it exited. */
  stop(): Promise<void>;
  kill(): Promise<void>;
  /** Waits by blocking queries on `path` until `holds` accepts its JSON; when it did, or undefined past `limitMs`. */
  awaitView(path: string, holds: (body: unknown) => boolean, limitMs: number): Promise<number | undefined>;
}

export async function startRealAgent(spec: RealAgentSpec): Promise<RealAgent> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-scale-'));
  const file = join(dir, 'config.json');
  const services = Array.from({ length: spec.services }, (_, i) => ({
    id: `svc-${i}`,
    name: `svc-${i}`,
    port: 20_000 + i,
    check: { check_id: checkId(i), ttl: '24h', status: 'passing' },
  }));
  await writeFile(
    file,
    JSON.stringify({
      node_name: spec.name,
      server: spec.server,
      http_config: { header_brand: 'Consul' },
      cluster: {
        etcd: { endpoints: spec.endpoints, prefix: spec.prefix },
        member_ttl: spec.memberTtl,
        leader_probe_interval: spec.probeInterval,
      },
      services,
    }),
  );
  const port = await freePort();
  const args = [AGENT_MAIN, 'agent', '-dev', '-http-port', String(port), '-log-level', 'warn', '-config-file', file];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  let gone = false;
  void exited.then(() => {
    gone = true;
    return rm(dir, { recursive: true, force: true });
  });
  const stop = async (signal: NodeJS.Signals): Promise<void> => {
    if (!gone) child.kill(signal);
    await exited;
  };
  try {
    await waitForPort(port, START_TIMEOUT_MS, () => (gone ? `agent ${spec.name} exited: ${stderr}` : undefined));
  } catch (err) {
    await stop('SIGKILL');
    throw err;
  }
  const url = `http://${LOOPBACK}:${port}`;
  return {
    name: spec.name,
    server: spec.server,
    pid: child.pid as number,
    url,
    stop: () => stop('SIGTERM'),
    kill: () => stop('SIGKILL'),
    awaitView: (path, holds, limitMs) => awaitView(url, path, holds, limitMs),
  };
}

async function awaitView(
  url: string,
  path: string,
  holds: (body: unknown) => boolean,
  limitMs: number,
): Promise<number | undefined> {
  const end = wallMs() + limitMs;
  let index = '0';
  while (wallMs() < end) {
    const wait = Math.max(1, Math.min(BLOCK_WAIT_S, Math.ceil((end - wallMs()) / 1000)));
    const sep = path.includes('?') ? '&' : '?';
    try {
      const res = await fetch(`${url}${path}${sep}index=${index}&wait=${wait}s`, {
        signal: AbortSignal.timeout(wait * 1000 + 5_000),
      });
      const body: unknown = await res.json();
      if (res.ok && holds(body)) return wallMs();
      const next = res.headers.get('x-consul-index') ?? '0';
      // An index that went back (a view re-read) starts the wait over, as Consul's clients do.
      index = BigInt(next) < BigInt(index) ? '0' : next;
    } catch {
      // A refused or timed-out call is asked again until the limit: the answer is what counts.
    }
  }
  return undefined;
}

/** Nodes to a count of their service checks, from /v1/health/state/any. */
export function serviceChecksByNode(body: unknown): Map<string, number> {
  const counts = new Map<string, number>();
  for (const check of body as { Node: string; ServiceID: string }[])
    if (check.ServiceID !== '') counts.set(check.Node, (counts.get(check.Node) ?? 0) + 1);
  return counts;
}

/**
 * A file of the build this harness belongs to: beside this one when it runs compiled (in dist/, or
 * another build directory), else in the repository's dist/ (vitest runs the TypeScript).
 */
export function builtFile(relative: string): string {
  if (import.meta.filename.endsWith('.js')) return join(import.meta.dirname, '../..', relative);
  return join(findUp(import.meta.dirname, 'package.json'), '..', 'dist', relative);
}
