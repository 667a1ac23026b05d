// A server under test as a child process on a known loopback port: start, wait until it accepts,
// stop with SIGTERM (SIGKILL after a grace period). Children never outlive the bench process.
import { spawn, type ChildProcess } from 'node:child_process';
import { waitForPort } from './ports.js';

export interface ServerProcess {
  readonly name: string;
  readonly pid: number;
  readonly port: number;
  /** The last few KiB the child wrote, for error messages. */
  output(): string;
  stop(): Promise<void>;
}

export interface SpawnServerOptions {
  name: string;
  args: readonly string[];
  port: number;
  startTimeoutMs?: number;
  /** A command the child runs under, before node and its args (e.g. valgrind and its flags). */
  wrapper?: readonly string[];
  /** A program other than node (a Go peer's binary), run with `args`. */
  program?: string;
  /** Added to the bench's environment. */
  env?: Readonly<Record<string, string>>;
  /** Runs after the child has exited, e.g. to remove its data directory. */
  cleanup?: () => Promise<void>;
}

// Enough to show a start-up error or a stack, small enough to keep per child for the whole run.
const OUTPUT_TAIL_BYTES = 8 * 1024;
const STOP_GRACE_MS = 5000;

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});
// Dying by a signal skips 'exit', so turn Ctrl-C and SIGTERM into an exit that runs the above.
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

/** Starts `node <args>` (or `program <args>`) and resolves once its port accepts connections. */
export async function spawnServer(options: SpawnServerOptions): Promise<ServerProcess> {
  const [command, ...prefix] = [...(options.wrapper ?? []), options.program ?? process.execPath];
  const child = spawn(command as string, [...prefix, ...options.args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: options.env === undefined ? process.env : { ...process.env, ...options.env },
  });
  live.add(child);
  let tail = '';
  const keep = (chunk: Buffer): void => {
    // Always drained: a full pipe would block the child's writes and stall the server.
    tail = (tail + chunk.toString('utf8')).slice(-OUTPUT_TAIL_BYTES);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let exited: string | undefined;
  let spawnError: string | undefined;
  const exit = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      exited = `${options.name} exited (code ${code ?? '-'}, signal ${signal ?? '-'})`;
      live.delete(child);
      resolve();
    });
  });
  child.once('error', (err) => (spawnError = `${options.name} failed to start: ${err.message}`));

  const stop = async (): Promise<void> => {
    if (exited === undefined) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      await exit;
      clearTimeout(timer);
    }
    await options.cleanup?.();
  };

  try {
    await waitForPort(options.port, options.startTimeoutMs ?? 15_000, () => spawnError ?? exited);
  } catch (err) {
    await stop();
    const reason = err instanceof Error ? err.message : String(err);
    throw new Error(`${options.name}: ${reason}\n--- output ---\n${tail}`, { cause: err });
  }
  const pid = child.pid;
  if (pid === undefined) throw new Error(`${options.name}: no pid`);
  return { name: options.name, pid, port: options.port, output: () => tail, stop };
}
