// Starts the built svc-agent as a child process on a free loopback port, in memory (-dev) or
// durable (-data-dir in a fresh directory that is removed on stop).
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { spawnServer, type ServerProcess } from './child.js';
import { AGENT_MAIN, BENCH_OUT } from './paths.js';
import { freePort } from './ports.js';

export type AgentMode = 'dev' | 'durable';

/** Whether `npx tsc -p tsconfig.build.json` has produced the agent CLI yet. */
export function agentBuilt(): boolean {
  return existsSync(AGENT_MAIN);
}

/** The line a bench prints when it skips the agent. */
export const AGENT_MISSING = `${AGENT_MAIN} not found (build: npx tsc -p tsconfig.build.json)`;

async function mkdirOut(): Promise<string> {
  await mkdir(BENCH_OUT, { recursive: true });
  return BENCH_OUT;
}

/**
 * `extraArgs` go after the defaults (e.g. `-config-file <path>`); later flags win. `main`: another
 * build's CLI. `wrapper`: a command the agent runs under (valgrind), with its start-up timeout.
 */
export async function startAgent(
  mode: AgentMode,
  extraArgs: readonly string[] = [],
  main: string = AGENT_MAIN,
  wrapper?: { readonly command: readonly string[]; readonly startTimeoutMs: number },
): Promise<ServerProcess> {
  const port = await freePort();
  // Under .bench-out/, on the repository's disk: a tmpfs /tmp would make every fsync free and the
  // durable figures fiction.
  const dataDir = mode === 'durable' ? await mkdtemp(join(await mkdirOut(), 'data-')) : undefined;
  const storage = dataDir === undefined ? ['-dev'] : ['-data-dir', dataDir];
  // The benches set the agent beside a bare-uWS ceiling: on uWS unless a bench picks the transport
  // (the default, auto, is uWS on loopback too, docs/decisions.md D18; bench/sizing/transports.ts has both).
  const transport = extraArgs.includes('-http-transport') ? [] : ['-http-transport', 'uws'];
  return spawnServer({
    name: `agent (${mode})`,
    args: [main, 'agent', ...storage, '-http-port', String(port), '-log-level', 'warn', ...transport, ...extraArgs],
    port,
    ...(wrapper === undefined ? {} : { wrapper: wrapper.command, startTimeoutMs: wrapper.startTimeoutMs }),
    cleanup: async () => {
      if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
    },
  });
}
