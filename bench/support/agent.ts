// Starts the built svc-agent as a child process on a free loopback port, in memory (-dev) or
// durable (-data-dir in a fresh temp directory that is removed on stop).
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnServer, type ServerProcess } from './child.js';
import { AGENT_MAIN } from './paths.js';
import { freePort } from './ports.js';

export type AgentMode = 'dev' | 'durable';

/** Whether `npx tsc -p tsconfig.build.json` has produced the agent CLI yet. */
export function agentBuilt(): boolean {
  return existsSync(AGENT_MAIN);
}

export async function startAgent(mode: AgentMode): Promise<ServerProcess> {
  const port = await freePort();
  const dataDir = mode === 'durable' ? await mkdtemp(join(tmpdir(), 'svc-agent-bench-')) : undefined;
  const storage = dataDir === undefined ? ['-dev'] : ['-data-dir', dataDir];
  return spawnServer({
    name: `agent (${mode})`,
    args: [AGENT_MAIN, 'agent', ...storage, '-http-port', String(port), '-log-level', 'warn'],
    port,
    cleanup: async () => {
      if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
    },
  });
}
