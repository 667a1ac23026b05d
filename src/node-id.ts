// The node's ID: configured, else kept in `<data_dir>/node-id` across restarts (as Consul does),
// else fresh for an in-memory dev agent.
import { readFile, writeFile } from 'node:fs/promises';
import { makeDir } from './core/make-dir.js';
import { join } from 'node:path';
import { agentError } from './core/errors.js';
import { generateId, isUuid } from './core/ids.js';
import { PRIVATE_FILE_MODE } from './core/private-files.js';

export async function resolveNodeId(configured: string | undefined, dataDir: string | undefined): Promise<string> {
  if (configured) return configured;
  if (dataDir === undefined) return generateId();
  const file = join(dataDir, 'node-id');
  try {
    const stored = (await readFile(file, 'utf8')).trim();
    if (!isUuid(stored)) throw agentError('NODE_ID_CORRUPT', { file });
    return stored.toLowerCase();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const id = generateId();
  await makeDir(dataDir);
  await writeFile(file, `${id}\n`, { mode: PRIVATE_FILE_MODE });
  return id;
}
