// Runs autocannon (a devDependency, as a separate process so the bench's own event loop is not
// the client) and returns its figures in the LoadResult shape. The fallback when wrk cannot be
// had, and the tool for scenarios that need per-request logic in JS later.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { LoadRequest, LoadResult, LoadSettings, LoadTool } from './load.js';
import { runCommand } from './run-command.js';

const require = createRequire(import.meta.url);

interface AutocannonJson {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  errors: number;
  timeouts: number;
  non2xx: number;
}

export function autocannonTool(): LoadTool {
  const cli = require.resolve('autocannon');
  const pkg = JSON.parse(readFileSync(require.resolve('autocannon/package.json'), 'utf8')) as { version: string };
  return {
    name: 'autocannon',
    version: pkg.version,
    async run(request: LoadRequest, settings: LoadSettings): Promise<LoadResult> {
      // autocannon would keep reconnecting on Connection: close and report nonsense; refuse instead.
      if (request.close === true) throw new Error('autocannon: Connection: close scenarios need wrk');
      if (request.bodies !== undefined || request.paths !== undefined)
        throw new Error('autocannon: per-request bodies and paths need wrk');
      const args = [
        cli,
        '-j',
        '-c',
        String(settings.connections),
        '-d',
        String(settings.durationS),
        '-m',
        request.method,
      ];
      if (request.body !== undefined) args.push('-b', request.body, '-H', 'Content-Type=application/octet-stream');
      for (const [name, value] of Object.entries(request.headers ?? {})) args.push('-H', `${name}=${value}`);
      args.push(request.url);
      const { code, stdout, stderr } = await runCommand(process.execPath, args);
      if (code !== 0) throw new Error(`autocannon exited ${code}: ${stderr}`);
      const json = JSON.parse(stdout) as AutocannonJson;
      // autocannon's latency percentiles are whole milliseconds: sub-millisecond p50s read as 0.
      return {
        tool: 'autocannon',
        requests: json.requests.total,
        rps: json.requests.average,
        p50Ms: json.latency.p50,
        p99Ms: json.latency.p99,
        errors: json.errors + json.timeouts,
        non2xx: json.non2xx,
      };
    },
  };
}
