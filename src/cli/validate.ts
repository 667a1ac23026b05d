// `svc-agent validate <file|dir>...`: loads config files and directories as `agent -config-file`
// and `-config-dir` would (same keys, same checks of their service and check blocks, data_dir
// required), starts nothing, and says whether the agent would start with them: exit 0
// and `Configuration is valid!`, or 1 and every problem, one line each, as Consul's validate does.
import { stat } from 'node:fs/promises';
import { isConfigError } from '../config/errors.js';
import { loadConfig } from '../config/load.js';
import { readConfigSources, type ConfigPath } from '../config/sources.js';
import { describeFsError } from '../core/error-text.js';
import { isAgentError } from '../core/errors.js';
import { vetConfigRegistrations } from '../local/local-agent.js';
import { unknownFlag } from './usage-error.js';

export interface ValidateIo {
  out(text: string): void;
  err(text: string): void;
}

const systemIo: ValidateIo = {
  out: (text) => void process.stdout.write(text),
  err: (text) => void process.stderr.write(text),
};

const USAGE = 'Usage: svc-agent validate [-quiet] FILE_OR_DIRECTORY...';

export async function runValidate(argv: readonly string[], io: ValidateIo = systemIo): Promise<number> {
  let quiet = false;
  const named: string[] = [];
  for (const arg of argv) {
    if (arg === '-quiet' || arg === '--quiet') quiet = true;
    else if (arg === '-h' || arg === '-help' || arg === '--help') {
      io.out(`${USAGE}\n\n  Checks config files and directories as the agent would load them; starts nothing.\n`);
      return 0;
    } else if (arg.startsWith('-') && arg !== '-') {
      io.err(`${unknownFlag(arg.replace(/^--?/, '').replace(/=.*$/s, ''), ['quiet']).message}\n${USAGE}\n`);
      return 1;
    } else named.push(arg);
  }
  if (named.length === 0) {
    io.err(`Must specify at least one config file or directory\n${USAGE}\n`);
    return 1;
  }
  const paths: ConfigPath[] = [];
  for (const path of named) {
    try {
      paths.push({ kind: (await stat(path)).isDirectory() ? 'dir' : 'file', path });
    } catch (err) {
      io.err(`Config validation failed: ${path}: ${describeFsError(err)}\n`);
      return 1;
    }
  }
  const warnings: string[] = [];
  try {
    const config = loadConfig({
      sources: await readConfigSources(paths),
      flags: {},
      dev: false,
      warn: (w) => warnings.push(w),
    });
    vetConfigRegistrations(config.registrations);
  } catch (err) {
    const problems = isConfigError(err) ? err.problems : isAgentError(err) ? [err.message] : undefined;
    if (problems === undefined) throw err;
    io.err(`Config validation failed:\n${problems.map((p) => `    ${p}\n`).join('')}`);
    return 1;
  }
  if (!quiet) {
    for (const warning of warnings) io.err(`${warning}\n`);
    io.out('Configuration is valid!\n');
  }
  return 0;
}
