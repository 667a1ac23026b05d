// `lock`: Consul's `consul lock` (command/lock/lock.go), same flags, same lines. Under a session of
// its own it takes the lock at `<prefix>/.lock` (lock.ts) or, with -n above 1, a slot of the
// semaphore at `<prefix>` (semaphore.ts), runs the child while it holds it (child.ts), and when the
// child exits, the lock is lost or the command is interrupted (the child then gets SIGTERM, and
// SIGKILL after a grace period) releases it, ends the session and removes the key when no one else
// uses it.
import { posix } from 'node:path';
import { parseDuration } from '../../../core/duration.js';
import { usageError } from '../../usage-error.js';
import { SERVER_FLAGS, type ClientCommand, type Context } from '../command.js';
import { killChild, startChild, type Child } from './child.js';
import { text } from './errors.js';
import { LOCK_KEY, type Holder, type LockOptions } from './holder.js';
import { Kv } from './kv.js';
import { Lock } from './lock.js';
import { Semaphore } from './semaphore.js';

/** Consul's defaultMonitorRetry: -monitor-retry's default, the 500s ridden out while watching the lock. */
const MONITOR_RETRIES = 3;

function timeoutOf(flags: Context['flags']): number {
  const raw = flags.timeout ?? flags.try;
  if (typeof raw !== 'string') return 0;
  const ms = parseDuration(raw);
  if (ms === undefined)
    throw usageError('CLI_FLAG_VALUE', {
      value: raw,
      flag: flags.timeout === undefined ? 'try' : 'timeout',
      reason: 'parse error',
    });
  return ms;
}

async function run({ api, flags, args, io }: Context): Promise<number> {
  const fail = (line: string): number => {
    io.err(`${line}\n`);
    return 1;
  };
  const verbose = flags.verbose === true ? (line: string) => io.out(`${line}\n`) : () => {};
  const limit = typeof flags.n === 'number' ? flags.n : 1;
  if (limit <= 0) return fail('Lock holder limit must be positive');
  if (args.length < 2) return fail('Key prefix and child command must be specified');
  const prefix = (args[0] as string).replace(/^\//, '');
  const childArgs = args.slice(1);
  const timeoutMs = timeoutOf(flags);
  if (timeoutMs < 0) return fail('Timeout must be positive');
  const options: LockOptions = {
    name:
      typeof flags.name === 'string' && flags.name !== ''
        ? flags.name
        : `Consul lock for '${childArgs.join(' ')}' at '${prefix}'`,
    timeoutMs,
    monitorRetries: typeof flags['monitor-retry'] === 'number' ? flags['monitor-retry'] : MONITOR_RETRIES,
  };
  await api.json('GET', '/v1/agent/self', undefined, 'querying Consul agent');

  const kv = new Kv(api);
  let holder: Holder;
  if (limit === 1) {
    const key = posix.join(prefix, LOCK_KEY);
    verbose(`Setting up lock at path: ${key}`);
    holder = new Lock(api, kv, key, options);
  } else {
    verbose(`Setting up semaphore (limit ${limit}) at prefix: ${prefix}`);
    if (prefix === '') return fail('Lock setup failed: missing prefix');
    holder = new Semaphore(api, kv, prefix, limit, options);
  }

  // SIGINT or SIGTERM: Consul's shutdown; a running child gets the signal too (its ForwardSignals).
  const shutdown = new AbortController();
  let child: Child | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (child !== undefined && child.process.exitCode === null) child.process.kill(signal);
    shutdown.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    verbose('Attempting lock acquisition');
    const stop = timeoutMs > 0 ? AbortSignal.any([shutdown.signal, AbortSignal.timeout(timeoutMs)]) : shutdown.signal;
    let held: boolean;
    try {
      held = await holder.acquire(stop);
    } catch (err) {
      return fail(`Lock acquisition failed: ${text(err)}`);
    }
    if (!held) return fail('Shutdown triggered or timeout during lock acquisition');

    let failed = false;
    if (shutdown.signal.aborted) {
      io.err('Shutdown triggered during lock acquisition\n');
    } else {
      verbose('Starting handler');
      if (flags['pass-stdin'] === true) verbose('Stdin passed to handler process');
      const running = startChild(childArgs, flags.shell !== false, flags['pass-stdin'] === true, io);
      child = running;
      const watching = new AbortController();
      const shutDown = new Promise<'shutdown'>((resolve) =>
        shutdown.signal.addEventListener('abort', () => resolve('shutdown'), { once: true }),
      );
      const first = await Promise.race([
        running.exited.then((ok) => (ok ? 'exited' : 'failed')),
        holder.lost(watching.signal).then(() => 'lost' as const),
        shutDown,
      ]);
      watching.abort();
      if (first === 'exited' || first === 'failed') {
        failed = first === 'failed';
        verbose('Child terminated, releasing lock');
      } else {
        verbose(first === 'lost' ? 'Lock lost, killing child' : 'Shutdown triggered, killing child');
        await killChild(running, io, verbose);
      }
    }

    try {
      await holder.release();
    } catch (err) {
      return fail(`Lock release failed: ${text(err)}`);
    }
    try {
      verbose((await holder.cleanup()) === 'removed' ? 'Cleanup succeeded' : 'Cleanup aborted, lock in use');
    } catch (err) {
      return fail(`Lock cleanup failed: ${text(err)}`);
    }
    // Consul's -child-exit-code: 2 for a child that failed on its own, whatever its status.
    return flags['child-exit-code'] === true && failed ? 2 : 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

// -stale is left out: the lock reads its key consistently, as Consul's does whatever -stale says.
const { stale: _stale, ...DATACENTER_FLAG } = SERVER_FLAGS;

export const lockCommands: ClientCommand[] = [
  {
    name: 'lock',
    synopsis: 'Execute a command holding a lock',
    argsUsage: 'prefix child...',
    arity: [0, Number.POSITIVE_INFINITY],
    flags: {
      'child-exit-code': {
        kind: 'bool',
        doc: "Exit 2 if the child process exited with an error if this is true, otherwise this doesn't propagate an error from the child. The default value is false.",
      },
      n: {
        kind: 'int',
        doc: 'Optional limit on the number of concurrent lock holders. The underlying implementation switches from a lock to a semaphore when the value is greater than 1. The default value is 1.',
      },
      'monitor-retry': {
        kind: 'int',
        doc: 'Number of times to retry if Consul returns a 500 error while monitoring the lock. This allows riding out brief periods of unavailability without causing leader elections, but increases the amount of time required to detect a lost lock in some cases. The default value is 3, with a 1s wait between retries. Set this value to 0 to disable retires.',
      },
      name: {
        kind: 'string',
        doc: 'Optional name to associate with the lock session. It not provided, one is generated based on the provided child command.',
      },
      'pass-stdin': { kind: 'bool', doc: 'Pass stdin to the child process.' },
      shell: {
        kind: 'bool',
        doc: 'Use a shell to run the command (can set a custom shell via the SHELL environment variable).',
      },
      timeout: {
        kind: 'string',
        doc: 'Maximum amount of time to wait to acquire the lock, specified as a duration like "1s" or "3h". The default value is 0.',
      },
      verbose: { kind: 'bool', doc: 'Enable verbose (debugging) output.' },
      try: { kind: 'string', doc: 'DEPRECATED. Use -timeout instead.' },
      ...DATACENTER_FLAG,
    },
    run,
  },
];
