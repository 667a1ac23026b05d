// Runs wrk against one URL (keep-alive, fixed connections) and returns its figures. Request
// shapes that wrk cannot take on its command line (PUT bodies, Connection: close) go in a
// generated Lua script that only sets wrk.method/body/headers, so wrk still pre-builds one
// request and spends no Lua per request; only a list of bodies (`bodies`) or paths (`paths`) adds
// a request() function, which hands out requests formatted once in init().
import { rmSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LoadRequest, LoadResult, LoadSettings, LoadTool } from './load.js';
import { runCommand } from './run-command.js';
import { parseWrkOutput } from './wrk-parse.js';

// Requests slower than this count as timeouts; far above anything a healthy run shows, so a
// timeout always means a stall worth reading about.
const REQUEST_TIMEOUT = '5s';

function luaString(text: string): string {
  // JSON's escapes (\" \\ \n) are valid Lua for printable ASCII; wrk's LuaJIT has no \u escapes.
  if (!/^[\x20-\x7e]*$/.test(text)) throw new Error('wrk script: keep bodies and headers printable ASCII');
  return JSON.stringify(text);
}

export function wrkScript(request: LoadRequest): string | undefined {
  const lines: string[] = [];
  if (request.method !== 'GET') lines.push(`wrk.method = ${luaString(request.method)}`);
  if (request.body !== undefined) {
    lines.push(`wrk.body = ${luaString(request.body)}`);
    lines.push('wrk.headers["Content-Type"] = "application/octet-stream"');
  }
  if (request.bodies !== undefined || request.paths !== undefined) {
    const bodies = request.bodies ?? [];
    const paths = request.paths ?? [];
    if (request.bodies !== undefined) lines.push('wrk.headers["Content-Type"] = "application/octet-stream"');
    lines.push(`local bodies = {\n${bodies.map(luaString).join(',\n')}\n}`);
    lines.push(`local paths = {\n${paths.map(luaString).join(',\n')}\n}`);
    lines.push('local requests, count, n = {}, 0, 0');
    lines.push('function init(args)');
    // A missing entry (nil) keeps wrk's default: the URL's path, the script's body.
    lines.push(
      `  for i = 1, ${Math.max(bodies.length, paths.length)} do requests[i] = wrk.format(nil, paths[i], nil, bodies[i]) end`,
    );
    lines.push('  count = #requests');
    lines.push('end');
    lines.push('function request()');
    lines.push('  n = n % count + 1');
    lines.push('  return requests[n]');
    lines.push('end');
  }
  if (request.close === true) lines.push('wrk.headers["Connection"] = "close"');
  for (const [name, value] of Object.entries(request.headers ?? {}))
    lines.push(`wrk.headers[${luaString(name)}] = ${luaString(value)}`);
  return lines.length === 0 ? undefined : `${lines.join('\n')}\n`;
}

let scriptDir: string | undefined;
async function writeScript(source: string): Promise<string> {
  if (scriptDir === undefined) {
    const dir = await mkdtemp(join(tmpdir(), 'svc-bench-wrk-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    scriptDir = dir;
  }
  const path = join(scriptDir, `s${Date.now()}-${Math.random().toString(36).slice(2)}.lua`);
  await writeFile(path, source);
  return path;
}

export function wrkTool(path: string, version: string): LoadTool {
  return {
    name: 'wrk',
    version,
    async run(request: LoadRequest, settings: LoadSettings): Promise<LoadResult> {
      const args = [
        `-t${settings.threads}`,
        `-c${settings.connections}`,
        `-d${settings.durationS}s`,
        '--latency',
        '--timeout',
        REQUEST_TIMEOUT,
      ];
      const script = wrkScript(request);
      if (script !== undefined) args.push('-s', await writeScript(script));
      args.push(request.url);
      const { code, stdout, stderr } = await runCommand(path, args);
      if (code !== 0) throw new Error(`wrk exited ${code}: ${stderr || stdout}`);
      const report = parseWrkOutput(stdout);
      const { connect, read, write, timeout } = report.errors;
      // With Connection: close every response ends in a close that wrk reports as a read error.
      return {
        tool: 'wrk',
        requests: report.requests,
        rps: report.rps,
        p50Ms: report.latencyMs.get(50) ?? Number.NaN,
        p99Ms: report.latencyMs.get(99) ?? Number.NaN,
        errors: connect + write + timeout + (request.close === true ? 0 : read),
        non2xx: report.non2xx,
      };
    },
  };
}
