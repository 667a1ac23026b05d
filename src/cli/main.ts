#!/usr/bin/env node
// `svc-agent`: parses the command line, loads and validates the config, starts the agent, and
// stops it gracefully on SIGINT/SIGTERM. Exit codes: 0 after a clean stop, 1 on a start-up error.
import { createAgent, type Agent } from '../agent.js';
import { isConfigError } from '../config/errors.js';
import { loadConfig } from '../config/load.js';
import { isAgentError } from '../core/errors.js';
import { createLogger } from '../core/log.js';
import { openFilesReport, readOpenFilesLimit } from '../core/open-files.js';
import { uwsIsNative } from '../http/uws-server.js';
import { VERSION } from '../version.js';
import { parseCommand, type AgentArgs } from './args.js';

/** The grace period of a stop; past it the process exits anyway (with status 1). */
const STOP_DEADLINE_MS = 5000;

async function main(argv: readonly string[]): Promise<number> {
  let command;
  try {
    command = parseCommand(argv);
  } catch (err) {
    return fail(err);
  }
  switch (command.name) {
    case 'help':
      (command.exitCode === 0 ? process.stdout : process.stderr).write(`${command.text}\n`);
      return command.exitCode;
    case 'version':
      process.stdout.write(`svc-agent v${VERSION}\n`);
      return 0;
    case 'agent':
      return runAgent(command.args);
  }
}

async function runAgent(args: AgentArgs): Promise<number> {
  let config;
  // Deprecation warnings wait for the logger, which needs the config's log level.
  const warnings: string[] = [];
  try {
    config = loadConfig({ files: args.files, flags: args.flags, dev: args.dev, warn: (message) => warnings.push(message) });
  } catch (err) {
    return fail(err);
  }
  const log = createLogger(config.logLevel);
  for (const message of warnings) log.warn({}, message);
  const openFiles = openFilesReport(readOpenFilesLimit());
  log[openFiles.level](openFiles.obj, openFiles.msg);
  if (!uwsIsNative && process.env.SVC_ALLOW_UWS_FALLBACK !== '1') {
    const message =
      'uWebSockets.js native binary not loaded (the JavaScript fallback is far slower); refusing to start. ' +
      'Set SVC_ALLOW_UWS_FALLBACK=1 to run on the fallback anyway.';
    log.error({ uwsNative: false }, message);
    process.stderr.write(`==> ${message}\n`);
    return 1;
  }

  let agent: Agent;
  let port: number;
  try {
    agent = await createAgent(config, { log, acceptStateLoss: args.acceptStateLoss });
    port = await agent.listen();
  } catch (err) {
    log.error({ err }, 'start-up failed');
    return fail(err);
  }
  log.info(
    {
      address: `${config.clientAddr}:${port}`,
      node: config.nodeName,
      datacenter: config.datacenter,
      dataDir: config.dataDir ?? null,
      inMemory: config.dataDir === undefined,
      uwsNative: uwsIsNative,
      version: VERSION,
      index: agent.store.index,
      recovery: 'recovery' in agent.store ? agent.store.recovery : null,
      etcd: config.cluster.etcd.endpoints.length > 0 ? config.cluster.etcd.endpoints : null,
      server: config.server,
    },
    'svc-agent started',
  );

  return new Promise<number>((resolve) => {
    const stop = (signal: string): void => {
      log.info({ signal }, 'shutting down');
      const deadline = setTimeout(() => {
        log.error({ deadlineMs: STOP_DEADLINE_MS }, 'graceful stop timed out');
        resolve(1);
      }, STOP_DEADLINE_MS);
      agent.close().then(
        () => {
          clearTimeout(deadline);
          log.info({}, 'stopped');
          resolve(0);
        },
        (err: unknown) => {
          clearTimeout(deadline);
          log.error({ err }, 'stop failed');
          resolve(1);
        },
      );
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

function fail(err: unknown): number {
  const message = isConfigError(err) || isAgentError(err) ? err.message : String(err);
  process.stderr.write(`==> ${message.split('\n').join('\n    ')}\n`);
  return 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`==> unexpected error: ${String(err)}\n`);
    process.exit(1);
  },
);
