// Chooses the load generator for a run: wrk (installed on demand) unless told otherwise, else
// autocannon with a loud notice, since figures from the two tools are not comparable.
import { autocannonTool } from './autocannon.js';
import type { LoadTool } from './load.js';
import { ensureWrk } from './wrk-install.js';
import { wrkTool } from './wrk.js';

export async function pickLoadTool(preferred: 'wrk' | 'autocannon'): Promise<LoadTool> {
  if (preferred === 'autocannon') return autocannonTool();
  const wrk = await ensureWrk();
  if (wrk.ok) return wrkTool(wrk.path, wrk.version);
  process.stderr.write(
    `\n*** wrk unavailable: ${wrk.reason}\n*** falling back to autocannon for EVERY row; ratios stay like-for-like, ` +
      'but absolute figures are not comparable with wrk runs.\n\n',
  );
  return autocannonTool();
}
