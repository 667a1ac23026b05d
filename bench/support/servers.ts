// Starts the reference servers (uWS ceiling, node:http baseline) as child processes on free ports.
import { spawnServer, type ServerProcess } from './child.js';
import { CEILING_SERVER, NODE_HTTP_SERVER } from './paths.js';
import { freePort } from './ports.js';

export async function startCeiling(): Promise<ServerProcess> {
  const port = await freePort();
  return spawnServer({ name: 'ceiling (bare uWS)', args: [CEILING_SERVER, String(port)], port });
}

export async function startNodeHttpBaseline(): Promise<ServerProcess> {
  const port = await freePort();
  return spawnServer({ name: 'node:http baseline', args: [NODE_HTTP_SERVER, String(port)], port });
}
