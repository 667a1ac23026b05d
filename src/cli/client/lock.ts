// `lock`: Consul's `consul lock`, same flags, same lines. Under a session of its own (TTL 15 s,
// renewed every half TTL) it takes the lock at `<prefix>/.lock` (api.Lock's layout) or, with -n
// above 1, a slot of the semaphore at `<prefix>` (api.Semaphore's: a contender key
// `<prefix>/<session>` and the holders record `<prefix>/.lock`), runs the child while it holds it,
// and when the child exits, the lock is lost or the command is interrupted (the child then gets
// SIGTERM, and SIGKILL after a grace period) releases it, ends the session and removes the key
// when no one else uses it.
import { spawn, type ChildProcess } from 'node:child_process';
import { posix } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseDuration } from '../../core/duration.js';
import { AgentError, isAgentError } from '../../core/errors.js';
import { usageError } from '../usage-error.js';
import { answerIndex, type Answer, type ApiClient } from './api.js';
import { SERVER_FLAGS, byBytes, type ClientCommand, type Context, type Io } from './command.js';

/** api.Lock's LockFlagValue and api.Semaphore's SemaphoreFlagValue, as decimal text: both are past 2^53. */
const LOCK_FLAG = 0x2ddccbc058a50c18n.toString();
const SEMAPHORE_FLAG = 0xe0f69a2baa414de0n.toString();
/** api.DefaultSemaphoreKey: a lock and a semaphore at one prefix conflict on it, and say so. */
const LOCK_KEY = '.lock';

const SESSION_TTL = '15s';
const SESSION_TTL_MS = 15_000;
/** api.Session.RenewPeriodic: after a failed renew, the next try in a second (until a TTL has passed). */
const RENEW_RETRY_MS = 1_000;
/** api.DefaultLockWaitTime: how long one blocking read waits while another holds the lock. */
const WAIT_MS = 15_000;
/** api.DefaultLockRetryTime: the pause after an acquire refused while the key is free (its lock-delay). */
const RETRY_MS = 5_000;
/** Consul's defaultMonitorRetry and defaultMonitorRetryTime: 500s ridden out while watching the lock. */
const MONITOR_RETRIES = 3;
const MONITOR_RETRY_MS = 1_000;
/** Consul's lockKillGracePeriod: SIGTERM, then SIGKILL this long after (a third of the 15 s lock-delay). */
const KILL_GRACE_MS = 5_000;

/** A KV entry as read; Flags as decimal text (a uint64 a number would round). */
interface Pair {
  readonly Key: string;
  readonly Flags: string;
  readonly Value: string | null;
  readonly Session?: string;
  readonly ModifyIndex: number;
}

interface ReadOptions {
  readonly index?: string | undefined;
  readonly waitMs?: number | undefined;
  readonly consistent?: boolean;
}

/** An answer the lock did not expect, in the words of Consul's Go client. */
class StatusError extends AgentError {
  constructor(
    readonly status: number,
    body: string,
  ) {
    super('CLI_UNEXPECTED_ANSWER', `Unexpected response code: ${status} (${body.trim()})`);
  }
}

/** api.IsRetryableError: a request that reached no agent, or its 500. */
const retryable = (err: unknown): boolean =>
  err instanceof StatusError ? err.status === 500 : isAgentError(err) && err.code === 'CLI_CONNECT_FAILED';

const text = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** `err` said as Go's `fmt.Errorf("<what>: %v", err)`. */
const wrapped = (what: string, err: unknown): Error => new Error(`${what}: ${text(err)}`);

/** `work`, its failure said as Go's `fmt.Errorf("<what>: %v", err)`. */
const labelled = <T>(what: string, work: Promise<T>): Promise<T> =>
  work.catch((err: unknown) => {
    throw wrapped(what, err);
  });

/** The KV reads and writes of a lock, on the client's requests. */
class Kv {
  constructor(private readonly api: ApiClient) {}

  async get(key: string, options: ReadOptions = {}): Promise<{ pair: Pair | undefined; index: string }> {
    const { pairs, index } = await this.read(keyPath(key), options);
    return { pair: pairs[0], index };
  }

  list(prefix: string, options: ReadOptions = {}): Promise<{ pairs: Pair[]; index: string }> {
    return this.read(`${keyPath(prefix)}?recurse`, options);
  }

  /** A PUT's `true` or `false` (acquire, release, cas). */
  async put(key: string, query: Readonly<Record<string, string | number>>, body = ''): Promise<boolean> {
    return outcome(await this.api.call('PUT', `${keyPath(key)}?${queryText(query)}`, body));
  }

  async delete(key: string, query: Readonly<Record<string, string | number>> = {}): Promise<boolean> {
    const q = queryText(query);
    return outcome(await this.api.call('DELETE', q === '' ? keyPath(key) : `${keyPath(key)}?${q}`));
  }

  private async read(path: string, options: ReadOptions): Promise<{ pairs: Pair[]; index: string }> {
    const extra = [
      ...(options.consistent === true ? ['consistent'] : []),
      ...(options.index === undefined ? [] : [`index=${options.index}`]),
      ...(options.waitMs === undefined ? [] : [`wait=${Math.max(1, Math.ceil(options.waitMs))}ms`]),
    ];
    const sep = path.includes('?') ? '&' : '?';
    const answer = await this.api.call('GET', extra.length === 0 ? path : `${path}${sep}${extra.join('&')}`);
    const index = answerIndex(answer);
    if (answer.status === 404) return { pairs: [], index };
    if (answer.status !== 200) throw new StatusError(answer.status, answer.text);
    // Flags become strings before parsing: the lock's two flag values are past 2^53.
    return { pairs: JSON.parse(answer.text.replace(/"Flags":\s*(\d+)/g, '"Flags":"$1"')) as Pair[], index };
  }
}

const keyPath = (key: string): string => `/v1/kv/${key.split('/').map(encodeURIComponent).join('/')}`;

const queryText = (query: Readonly<Record<string, string | number>>): string =>
  Object.entries(query)
    .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
    .join('&');

function outcome(answer: Answer): boolean {
  if (answer.status !== 200) throw new StatusError(answer.status, answer.text);
  return answer.text.trim() === 'true';
}

/** `work`'s value, or undefined once `signal` aborts first (the request is left to finish unread). */
function unless<T>(work: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const abort = (): void => resolve(undefined);
    signal.addEventListener('abort', abort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', abort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(err as Error);
      },
    );
  });
}

/** True after `ms`, false if `signal` aborted first. */
const pause = (ms: number, signal: AbortSignal): Promise<boolean> => sleep(ms, true, { signal }).catch(() => false);

/** The command's session: created with the lock, renewed as api.Session.RenewPeriodic renews it, ended with it. */
class Session {
  private timer: NodeJS.Timeout | undefined;
  private ended = false;

  private constructor(
    private readonly api: ApiClient,
    readonly id: string,
  ) {}

  static async create(api: ApiClient, body: Readonly<Record<string, string>>): Promise<Session> {
    const answer = await labelled(
      'failed to create session',
      api.call('PUT', '/v1/session/create', JSON.stringify(body)).then((a) => {
        if (a.status !== 200) throw new StatusError(a.status, a.text);
        return a;
      }),
    );
    const session = new Session(api, (JSON.parse(answer.text) as { ID: string }).ID);
    session.schedule(SESSION_TTL_MS / 2, SESSION_TTL_MS, Date.now());
    return session;
  }

  private schedule(inMs: number, ttlMs: number, renewedAt: number): void {
    this.timer = setTimeout(() => void this.renew(ttlMs, renewedAt), inMs);
  }

  private async renew(ttlMs: number, renewedAt: number): Promise<void> {
    try {
      const answer = await this.api.call('PUT', `/v1/session/renew/${this.id}`, '');
      if (this.ended) return;
      // Gone: renewing stops, and the lock's watch sees the lock go.
      if (answer.status === 404) return;
      if (answer.status !== 200) throw new StatusError(answer.status, answer.text);
      const [entry] = JSON.parse(answer.text) as { TTL?: string }[];
      if (entry === undefined) return;
      // The agent may answer with another TTL; renewal follows it.
      const ttl = parseDuration(entry.TTL ?? '') || ttlMs;
      this.schedule(ttl / 2, ttl, Date.now());
    } catch {
      if (this.ended || Date.now() - renewedAt > ttlMs) return;
      this.schedule(RENEW_RETRY_MS, ttlMs, renewedAt);
    }
  }

  /** Stops renewing and destroys the session (a failure is left to its TTL). */
  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.timer);
    await this.api.call('PUT', `/v1/session/destroy/${this.id}`, '').catch(() => undefined);
  }
}

interface LockOptions {
  readonly name: string;
  /** 0: wait as long as it takes (Consul's one-shot mode when above 0). */
  readonly timeoutMs: number;
  readonly monitorRetries: number;
}

/** What the command does with a lock or a semaphore (Consul's LockUnlock). */
interface Holder {
  /** Takes it: true once held, false when `stop` aborted first (interrupted, or -timeout passed). */
  acquire(stop: AbortSignal): Promise<boolean>;
  /** Resolves once it is no longer held, or can no longer be confirmed; or when `stop` aborts. */
  lost(stop: AbortSignal): Promise<void>;
  /** Gives it up and ends the session. */
  release(): Promise<void>;
  /** Removes the key unless someone else uses it (then `in use`). */
  cleanup(): Promise<'removed' | 'in use'>;
}

/** A read watched for as long as `holding` says so, with `retries` 500s ridden out in a row (api's monitorLock). */
async function watch(
  read: (index: string | undefined) => Promise<{ index: string; holding: boolean }>,
  retries: number,
  stop: AbortSignal,
): Promise<void> {
  let index: string | undefined;
  let left = retries;
  for (;;) {
    let seen;
    try {
      seen = await unless(read(index), stop);
    } catch (err) {
      if (left > 0 && retryable(err)) {
        if (!(await pause(MONITOR_RETRY_MS, stop))) return;
        left--;
        index = undefined;
        continue;
      }
      return;
    }
    if (seen === undefined || !seen.holding) return;
    index = seen.index;
    left = retries;
  }
}

/** Creates the session and runs `take` under it; the session when that took the lock, else it is ended. */
async function underSession(
  api: ApiClient,
  body: Readonly<Record<string, string>>,
  take: (session: string) => Promise<boolean>,
): Promise<Session | undefined> {
  const session = await Session.create(api, body);
  let held = false;
  try {
    held = await take(session.id);
  } finally {
    if (!held) await session.end();
  }
  return held ? session : undefined;
}

/** The wait of the next blocking read, or undefined once -timeout has passed (api's one-shot mode). */
function nextWait(options: LockOptions, started: number, attempt: number): number | undefined {
  if (options.timeoutMs === 0) return WAIT_MS;
  if (attempt === 0) return options.timeoutMs;
  const elapsed = Date.now() - started;
  return elapsed > options.timeoutMs ? undefined : options.timeoutMs - elapsed;
}

/** api.Lock at `key`: held while the key's Session is ours. */
class Lock implements Holder {
  private session: Session | undefined;

  constructor(
    private readonly api: ApiClient,
    private readonly kv: Kv,
    private readonly key: string,
    private readonly options: LockOptions,
  ) {}

  async acquire(stop: AbortSignal): Promise<boolean> {
    const body = { Name: this.options.name, TTL: SESSION_TTL };
    this.session = await underSession(this.api, body, (session) => this.take(session, stop));
    return this.session !== undefined;
  }

  private async take(session: string, stop: AbortSignal): Promise<boolean> {
    const started = Date.now();
    let index: string | undefined;
    for (let attempt = 0; ; attempt++) {
      const waitMs = nextWait(this.options, started, attempt);
      if (stop.aborted || waitMs === undefined) return false;
      const read = await unless(labelled('failed to read lock', this.kv.get(this.key, { index, waitMs })), stop);
      if (read === undefined) return false;
      if (read.pair !== undefined && read.pair.Flags !== LOCK_FLAG)
        throw new Error('Existing key does not match lock use');
      if (read.pair?.Session === session) return true;
      if (read.pair?.Session) {
        index = read.index;
        continue;
      }
      const locked = await labelled(
        'failed to acquire lock',
        this.kv.put(this.key, { acquire: session, flags: LOCK_FLAG }),
      );
      if (locked) return true;
      // Refused: held by another after all (wait on it), or free under a lock-delay (try again later).
      const why = await unless(this.kv.get(this.key), stop);
      if (why === undefined) return false;
      index = undefined;
      if (why.pair?.Session) index = why.index;
      else if (!(await pause(RETRY_MS, stop))) return false;
    }
  }

  lost(stop: AbortSignal): Promise<void> {
    const session = this.session?.id;
    return watch(
      async (index) => {
        const read = await this.kv.get(this.key, { index, consistent: true });
        return { index: read.index, holding: read.pair !== undefined && read.pair.Session === session };
      },
      this.options.monitorRetries,
      stop,
    );
  }

  async release(): Promise<void> {
    const session = this.session;
    if (session === undefined) return;
    try {
      await labelled('failed to release lock', this.kv.put(this.key, { release: session.id, flags: LOCK_FLAG }));
    } finally {
      await session.end();
    }
  }

  async cleanup(): Promise<'removed' | 'in use'> {
    const { pair } = await labelled('failed to read lock', this.kv.get(this.key));
    if (pair === undefined) return 'removed';
    if (pair.Flags !== LOCK_FLAG) throw new Error('Existing key does not match lock use');
    if (pair.Session) return 'in use';
    const removed = await labelled('failed to remove lock', this.kv.delete(this.key, { cas: pair.ModifyIndex }));
    return removed ? 'removed' : 'in use';
  }
}

/** The semaphore's holders record, as api.Semaphore writes it at `<prefix>/.lock`. */
interface Holders {
  Limit: number;
  Holders: Record<string, boolean>;
}

/** api.Semaphore at `prefix` with `limit` slots: held while the record names our session. */
class Semaphore implements Holder {
  private session: Session | undefined;
  private readonly lockKey: string;

  constructor(
    private readonly api: ApiClient,
    private readonly kv: Kv,
    private readonly prefix: string,
    private readonly limit: number,
    private readonly options: LockOptions,
  ) {
    this.lockKey = posix.join(prefix, LOCK_KEY);
  }

  async acquire(stop: AbortSignal): Promise<boolean> {
    // `delete`: a session that ends takes its contender key with it, which frees its slot.
    const body = { Name: this.options.name, TTL: SESSION_TTL, Behavior: 'delete' };
    this.session = await underSession(this.api, body, (session) => this.take(session, stop));
    return this.session !== undefined;
  }

  private async take(session: string, stop: AbortSignal): Promise<boolean> {
    const contender = posix.join(this.prefix, session);
    const made = await labelled(
      'failed to make contender entry',
      this.kv.put(contender, { acquire: session, flags: SEMAPHORE_FLAG }),
    );
    // Go's %v of the nil error it had.
    if (!made) throw new Error('failed to make contender entry: <nil>');
    const started = Date.now();
    let index: string | undefined;
    for (let attempt = 0; ; attempt++) {
      const waitMs = nextWait(this.options, started, attempt);
      if (stop.aborted || waitMs === undefined) return false;
      const read = await unless(labelled('failed to read prefix', this.kv.list(this.prefix, { index, waitMs })), stop);
      if (read === undefined) return false;
      const pair = this.lockPair(read.pairs);
      if (pair !== undefined && pair.Flags !== SEMAPHORE_FLAG)
        throw new Error('Existing key does not match semaphore use');
      const record = this.decode(pair);
      if (record.Limit !== this.limit)
        throw new Error(`semaphore limit conflict (lock: ${record.Limit}, local: ${this.limit})`);
      prune(record, read.pairs);
      if (Object.keys(record.Holders).length >= record.Limit) {
        index = read.index;
        continue;
      }
      record.Holders[session] = true;
      const set = await labelled(
        'failed to update lock',
        this.kv.put(this.lockKey, { cas: pair?.ModifyIndex ?? 0, flags: SEMAPHORE_FLAG }, encode(record)),
      );
      // Not set: another contender's update came first; read again.
      if (set) return true;
    }
  }

  lost(stop: AbortSignal): Promise<void> {
    const session = this.session?.id ?? '';
    return watch(
      async (index) => {
        const read = await this.kv.list(this.prefix, { index, consistent: true });
        let record: Holders;
        try {
          record = this.decode(this.lockPair(read.pairs));
        } catch {
          return { index: read.index, holding: false };
        }
        prune(record, read.pairs);
        return { index: read.index, holding: Object.hasOwn(record.Holders, session) };
      },
      this.options.monitorRetries,
      stop,
    );
  }

  async release(): Promise<void> {
    const session = this.session;
    if (session === undefined) return;
    try {
      for (;;) {
        const { pair } = await this.kv.get(this.lockKey);
        const record = this.decode(pair);
        if (!Object.hasOwn(record.Holders, session.id)) break;
        delete record.Holders[session.id];
        const set = await labelled(
          'failed to update lock',
          this.kv.put(this.lockKey, { cas: pair?.ModifyIndex ?? 0, flags: SEMAPHORE_FLAG }, encode(record)),
        );
        if (set) break;
      }
      await this.kv.delete(posix.join(this.prefix, session.id));
    } finally {
      await session.end();
    }
  }

  async cleanup(): Promise<'removed' | 'in use'> {
    const { pairs } = await labelled('failed to read prefix', this.kv.list(this.prefix));
    const pair = this.lockPair(pairs);
    if (pair === undefined) return 'removed';
    if (pair.Flags !== SEMAPHORE_FLAG) throw new Error('Existing key does not match semaphore use');
    const record = this.decode(pair);
    prune(record, pairs);
    if (Object.keys(record.Holders).length > 0) return 'in use';
    const removed = await labelled(
      'failed to remove semaphore',
      this.kv.delete(this.lockKey, { cas: pair.ModifyIndex }),
    );
    return removed ? 'removed' : 'in use';
  }

  private lockPair(pairs: readonly Pair[]): Pair | undefined {
    return pairs.find((p) => p.Key === this.lockKey);
  }

  /** The record in `pair`; a missing or empty key is a fresh one with our limit. */
  private decode(pair: Pair | undefined): Holders {
    if (pair === undefined || pair.Value === null) return { Limit: this.limit, Holders: {} };
    try {
      const record = JSON.parse(Buffer.from(pair.Value, 'base64').toString()) as Partial<Holders>;
      return { Limit: Number(record.Limit ?? 0), Holders: { ...record.Holders } };
    } catch (err) {
      throw wrapped('lock decoding failed', err);
    }
  }
}

/** Drops the holders whose session no longer holds a key under the prefix (their contender key went with it). */
function prune(record: Holders, pairs: readonly Pair[]): void {
  const alive = new Set(pairs.map((p) => p.Session).filter((s) => s));
  for (const holder of Object.keys(record.Holders)) if (!alive.has(holder)) delete record.Holders[holder];
}

/** Go's json.Marshal of the record: its holders in byte order. */
function encode(record: Holders): string {
  const holders = Object.keys(record.Holders)
    .sort(byBytes)
    .map((id) => `${JSON.stringify(id)}:true`);
  return `{"Limit":${record.Limit},"Holders":{${holders.join(',')}}}`;
}

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

interface Child {
  readonly process: ChildProcess;
  /** Resolves when it ended: true when it exited 0. */
  readonly exited: Promise<boolean>;
}

/** Starts the child (through $SHELL -c unless -shell=false) with CONSUL_LOCK_HELD=true, as Consul's startChild. */
function startChild(args: readonly string[], shell: boolean, passStdin: boolean, io: Io): Child {
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
async function killChild(child: Child, io: Io, verbose: (line: string) => void): Promise<void> {
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
