// The Go peer (bench/peers/authorize-go/main.go): Go found, or installed from Debian's golang-go, by
// scripts/ensure-go.sh; built into .bench-out/ once per bench process; run on one core
// (GOMAXPROCS=1), as the agent's event loop is. No test uses Go.
import { join } from 'node:path';
import { spawnServer, type ServerProcess } from './child.js';
import { BENCH_OUT, REPO_ROOT } from './paths.js';
import { freePort } from './ports.js';
import { runCommand } from './run-command.js';

const SOURCE_DIR = join(REPO_ROOT, 'bench', 'peers', 'authorize-go');
const BINARY = join(BENCH_OUT, 'authorize-go');

let built: Promise<string> | undefined;

async function build(): Promise<string> {
  const ensure = await runCommand('bash', [join(REPO_ROOT, 'scripts', 'ensure-go.sh')]);
  const go = ensure.stdout.trim();
  if (ensure.code !== 0 || go === '')
    throw new Error(`Go peer skipped: no Go toolchain (${ensure.stderr.trim() || 'scripts/ensure-go.sh failed'})`);
  const result = await runCommand(go, ['build', '-o', BINARY, '.'], process.env, SOURCE_DIR);
  if (result.code !== 0) throw new Error(`Go peer skipped: go build failed: ${result.stderr.trim()}`);
  return BINARY;
}

/** Builds (once) and starts the Go peer on a free loopback port; throws "Go peer skipped: ..." without Go. */
export async function startGoPeer(): Promise<ServerProcess> {
  built ??= build();
  const program = await built;
  const port = await freePort();
  return spawnServer({ name: 'Go net/http authorize', program, args: [String(port)], port, env: { GOMAXPROCS: '1' } });
}
