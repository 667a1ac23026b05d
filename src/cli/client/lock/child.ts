// The child the lock is held for (Consul's command/lock/lock.go: startChild, killChild): started
// through the shell with CONSUL_LOCK_HELD=true, its failure said in Go's words, and ended with
// SIGTERM, then SIGKILL after a grace period.
import { spawn, type ChildProcess } from 'node:child_process';
import type { Io } from '../command.js';
import { pause } from './abortable.js';

/** Consul's lockKillGracePeriod: SIGTERM, then SIGKILL this long after (a third of the 15 s lock-delay). */
const KILL_GRACE_MS = 5_000;

/** Go's names of the signals a child may end by (os/exec's "signal: terminated"). */
const SIGNAL_TEXT: Readonly<Record<string, string>> = {
  SIGTERM: 'terminated',
  SIGKILL: 'killed',
  SIGINT: 'interrupt',
  SIGHUP: 'hangup',
  SIGQUIT: 'quit',
  SIGABRT: 'aborted',
  SIGSEGV: 'segmentation fault',
  SIGPIPE: 'broken pipe',
  SIGUSR1: 'user defined signal 1',
  SIGUSR2: 'user defined signal 2',
};

export interface Child {
  readonly process: ChildProcess;
  /** Resolves when it ended: true when it exited 0. */
  readonly exited: Promise<boolean>;
}

/** Starts the child (through $SHELL -c unless -shell=false) with CONSUL_LOCK_HELD=true, as Consul's startChild. */
export function startChild(args: readonly string[], shell: boolean, passStdin: boolean, io: Io): Child {
  const [command, ...rest] = shell ? [process.env.SHELL || '/bin/sh', '-c', args.join(' ')] : args;
  const child = spawn(command as string, rest, {
    stdio: [passStdin ? 'inherit' : 'ignore', 'inherit', 'inherit'],
    env: { ...process.env, CONSUL_LOCK_HELD: 'true' },
  });
  const exited = new Promise<boolean>((resolve) => {
    child.once('error', (err: NodeJS.ErrnoException) => {
      const reason =
        err.code === 'ENOENT' ? `exec: ${JSON.stringify(command)}: executable file not found in $PATH` : err.message;
      io.err(`Error starting handler: ${reason}\n`);
      resolve(false);
    });
    child.once('exit', (code, signal) => {
      if (code === 0) return resolve(true);
      const how = signal === null ? `exit status ${code}` : `signal: ${SIGNAL_TEXT[signal] ?? signal}`;
      io.err(`Error running handler: ${how}\n`);
      resolve(false);
    });
  });
  return { process: child, exited };
}

/** SIGTERM, then SIGKILL if it has not exited after the grace period (Consul's killChild). */
export async function killChild(child: Child, io: Io, verbose: (line: string) => void): Promise<void> {
  const { pid } = child.process;
  if (pid === undefined) {
    verbose('No child process to kill');
    return;
  }
  verbose(`Terminating child pid ${pid}`);
  if (!child.process.kill('SIGTERM') && child.process.exitCode === null && child.process.signalCode === null) {
    io.err(`Failed to terminate ${pid}\n`);
    return;
  }
  const grace = new AbortController();
  const exited = await Promise.race([
    child.exited.then(() => true),
    pause(KILL_GRACE_MS, grace.signal).then(() => false),
  ]);
  grace.abort();
  if (exited) {
    verbose('Child terminated');
    return;
  }
  verbose(`Child did not exit after grace period of ${KILL_GRACE_MS / 1000}s`);
  verbose(`Killing child pid ${pid}`);
  if (!child.process.kill('SIGKILL') && child.process.exitCode === null && child.process.signalCode === null)
    io.err(`Failed to kill ${pid}\n`);
}
