// `svc-agent agent`: loads and validates the config, starts the agent, reloads it on SIGHUP (the
// same files and flags, re-read), and stops it gracefully on SIGINT/SIGTERM. Loaded only for the
// agent command, so the client commands start without the agent's modules.
import { createAgent, type Agent } from '../agent/index.js';
import { ConfigError } from '../config/errors.js';
import { loadConfig } from '../config/load.js';
import { readConfigSources } from '../config/sources.js';
import { describeFsError, errorText } from '../core/error-text.js';
import { AgentError } from '../core/errors.js';
import { createLogger } from '../core/log.js';
import { RotatingLogFile } from '../core/log-file.js';
import { openFilesReport, readOpenFilesLimit } from '../core/open-files.js';
import { VERSION } from '../version.js';
import type { AgentArgs } from './args.js';
import { fail } from './fail.js';

/** The grace period of a stop; past it the process exits anyway (with status 1). */
const STOP_DEADLINE_MS = 5000;

export async function runAgent(args: AgentArgs): Promise<number> {
  // Signals are ours before anything is printed or started: a SIGINT/SIGTERM during start-up (after
  // the member record is written, say) stops the agent gracefully once it is up instead of killing
  // it mid-join, and a SIGHUP (whose default is to end the process) is ignored until it is up.
  let requested: string | undefined;
  let noteRequest: ((signal: string) => void) | undefined; // logs it, once there is a logger
  let stopNow: ((signal: string) => void) | undefined;
  let reloadNow: (() => void) | undefined;
  const onStopSignal = (signal: string): void => {
    if (stopNow !== undefined) return stopNow(signal);
    if (requested !== undefined) return;
    requested = signal;
    noteRequest?.(signal);
  };
  process.once('SIGINT', onStopSignal);
  process.once('SIGTERM', onStopSignal);
  // systemd's ExecReload sends SIGHUP: reload, never stop (a failure is logged; the agent goes on).
  process.on('SIGHUP', () => reloadNow?.());
  let config;
  // Deprecation warnings wait for the logger, which needs the config's log level.
  const warnings: string[] = [];
  let warn = (message: string): void => void warnings.push(message);
  // Sources are read (HCL parsed) before each load: at start and on every reload.
  const load = async (): Promise<ReturnType<typeof loadConfig>> =>
    loadConfig({
      sources: await readConfigSources(args.config),
      flags: args.flags,
      dev: args.dev,
      warn: (message) => warn(message),
    });
  try {
    config = await load();
  } catch (err) {
    return fail(err);
  }
  let file: RotatingLogFile | undefined;
  try {
    const f = config.logFile;
    file =
      f.path === undefined
        ? undefined
        : new RotatingLogFile({
            path: f.path,
            maxBytes: f.rotateBytes,
            maxAgeMs: f.rotateDurationMs,
            maxFiles: f.rotateMaxFiles,
          });
  } catch (err) {
    return fail(new ConfigError([`log_file: cannot open ${config.logFile.path}: ${describeFsError(err)}`]));
  }
  const log = createLogger(config.logLevel, process.stdout, config.logJson ? 'json' : 'text', file);
  for (const message of warnings) log.warn({}, message);
  warn = (message) => log.warn({}, message);
  noteRequest = (signal) => log.info({ signal }, 'shutting down once started');
  if (requested !== undefined) noteRequest(requested);
  const openFiles = openFilesReport(readOpenFilesLimit());
  log[openFiles.level](openFiles.obj, openFiles.msg);
  let agent: Agent | undefined;
  reloadNow = () => {
    if (agent === undefined) {
      log.warn({ signal: 'SIGHUP' }, 'reload ignored: the agent is still starting');
      return;
    }
    log.info({ signal: 'SIGHUP' }, 'reloading config');
    agent.reload().catch(() => undefined);
  };
  // A start-up failure is one `==>` line saying what and where (with its causes' reasons); its
  // stack is a debug line.
  const startFailed = (err: unknown): number => {
    log.debug({ err }, 'start-up failed');
    return fail(err instanceof AgentError ? new AgentError(err.code, errorText(err)) : err);
  };
  try {
    agent = await createAgent(config, { log, acceptStateLoss: args.acceptStateLoss, reloadConfig: load });
  } catch (err) {
    return startFailed(err);
  }
  try {
    await agent.listen();
  } catch (err) {
    await agent.close().catch(() => {}); // the store's lock and the member record go with it
    return startFailed(err);
  }
  const listening = agent.listening!;
  const address = (port: number | undefined): string | null =>
    port === undefined
      ? null
      : config.clientAddr.includes(':')
        ? `[${config.clientAddr}]:${port}`
        : `${config.clientAddr}:${port}`;
  log.info(
    {
      address: address(listening.http),
      httpsAddress: address(listening.https),
      transport: listening.transport,
      transportReason: listening.transportReason,
      httpsTransport: listening.https === undefined ? null : 'node',
      uws: listening.uws ?? null,
      node: config.nodeName,
      datacenter: config.datacenter,
      dataDir: config.dataDir ?? null,
      inMemory: config.dataDir === undefined,
      version: VERSION,
      index: agent.store.index,
      recovery: agent.store.stats.backend === 'embedded' ? agent.store.stats.recovery : null,
      etcd: config.cluster.etcd.endpoints.length > 0 ? config.cluster.etcd.endpoints : null,
      server: config.server,
    },
    'svc-agent started',
  );

  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      log.info(signal === 'leave' ? { after: 'leave' } : { signal }, 'shutting down');
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
    stopNow = stop;
    if (requested !== undefined) stop(requested);
    // PUT /v1/agent/leave answered: the agent left its cluster and stops, as Consul's does (exit 0).
    void agent.left.then(() => stop('leave'));
  });
}
