// The Go peers (bench/peers/<name>/main.go): Go found, or installed from Debian's golang-go, by
// scripts/ensure-go.sh; each built into .bench-out/ once per bench process; run on one core
// (GOMAXPROCS=1), as the agent's event loop is. No test uses Go.
import { join } from 'node:path';
import { spawnServer, type ServerProcess } from './child.js';
import { BENCH_OUT, REPO_ROOT } from './paths.js';
import { freePort } from './ports.js';
import { runCommand } from './run-command.js';

const built = new Map<string, Promise<string>>();

async function build(peer: string): Promise<string> {
  const ensure = await runCommand('bash', [join(REPO_ROOT, 'scripts', 'ensure-go.sh')]);
  const go = ensure.stdout.trim();
  if (ensure.code !== 0 || go === '')
    throw new Error(`Go peer skipped: no Go toolchain (${ensure.stderr.trim() || 'scripts/ensure-go.sh failed'})`);
  const binary = join(BENCH_OUT, peer);
  const result = await runCommand(
    go,
    ['build', '-o', binary, '.'],
    process.env,
    join(REPO_ROOT, 'bench', 'peers', peer),
  );
  if (result.code !== 0) throw new Error(`Go peer skipped: go build failed: ${result.stderr.trim()}`);
  return binary;
}

/** Builds (once per bench process) the Go peer in bench/peers/<peer>/; throws "Go peer skipped: ..." without Go. */
export function buildGoPeer(peer: string): Promise<string> {
  let binary = built.get(peer);
  if (binary === undefined) built.set(peer, (binary = build(peer)));
  return binary;
}

/** Builds (once) and starts the authorize Go peer on a free loopback port; throws "Go peer skipped: ..." without Go. */
export async function startGoPeer(): Promise<ServerProcess> {
  const program = await buildGoPeer('authorize-go');
  const port = await freePort();
  return spawnServer({ name: 'Go net/http authorize', program, args: [String(port)], port, env: { GOMAXPROCS: '1' } });
}
