// The open-files limit the agent runs with, read back once at start-up and reported. Node raises
// the soft limit to the hard one itself before any JavaScript runs, as Go programs do, so the agent
// sets nothing (docs/decisions.md D16): it says what is in force and warns where that is too low.
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';

export interface OpenFilesLimit {
  /** The limit in force (RLIMIT_NOFILE's soft value); Infinity for "unlimited". */
  readonly soft: number;
  /** The ceiling an unprivileged process may raise it to. */
  readonly hard: number;
}

export interface LimitReport {
  readonly level: 'debug' | 'info' | 'warn';
  readonly obj: Record<string, unknown>;
  readonly msg: string;
}

/**
 * Below this a connection flood, or a few thousand parked blocking queries (a descriptor each),
 * runs the agent out of descriptors; 65536 is what the README's systemd unit sets.
 */
export const LOW_OPEN_FILES = 4096;
const ADVICE =
  'raise it where the agent is started: LimitNOFILE=65536 in its systemd unit (README, "Open files"), or ulimit -n';

/** The "Max open files" row of Linux's /proc/<pid>/limits. */
export function parseOpenFilesLimit(procLimits: string): OpenFilesLimit | undefined {
  const row = /^Max open files\s+(\S+)\s+(\S+)/m.exec(procLimits);
  if (row === null) return undefined;
  const value = (text: string): number => (text === 'unlimited' ? Infinity : Number(text));
  const soft = value(row[1] as string);
  const hard = value(row[2] as string);
  return Number.isNaN(soft) || Number.isNaN(hard) ? undefined : { soft, hard };
}

/** This process's limit, where the platform shows it (Linux); undefined elsewhere. */
export function readOpenFilesLimit(
  read: () => string = () => readFileSync('/proc/self/limits', 'utf8'),
): OpenFilesLimit | undefined {
  try {
    return parseOpenFilesLimit(read());
  } catch {
    return undefined;
  }
}

/** What the start-up log says about the limit. */
export function openFilesReport(limit: OpenFilesLimit | undefined): LimitReport {
  if (limit === undefined) return { level: 'debug', obj: {}, msg: 'open-files limit not readable on this platform' };
  const obj = { openFiles: limit.soft, openFilesHard: limit.hard };
  if (limit.soft < limit.hard) {
    return {
      level: 'warn',
      obj,
      msg: `open-files limit ${limit.soft} could not be raised to the hard limit ${limit.hard}; ${ADVICE}`,
    };
  }
  if (limit.soft < LOW_OPEN_FILES) {
    return {
      level: 'warn',
      obj,
      msg: `open-files limit ${limit.soft} is low: each connection and parked query holds a descriptor; ${ADVICE}`,
    };
  }
  return { level: 'info', obj, msg: 'open-files limit' };
}

/** How many more descriptors this process may open, where the platform shows it (Linux). */
export interface DescriptorProbe {
  /** True when opening one more descriptor fails for want of one (EMFILE, or the system's ENFILE). */
  exhausted(): boolean;
  /** Descriptors left under the limit in force, and that limit; undefined where the platform does not show them. */
  free(): { readonly free: number; readonly limit: number } | undefined;
}

const OUT_OF_DESCRIPTORS = new Set(['EMFILE', 'ENFILE']);

/** The limit last read, for when reading it needs the descriptor that is missing. */
let lastLimit: number | undefined;

/** The probe of this process: one open and close of /dev/null, and /proc/self/fd counted (Linux). */
export const processDescriptors: DescriptorProbe = {
  exhausted() {
    try {
      closeSync(openSync('/dev/null', 'r'));
      return false;
    } catch (err) {
      return OUT_OF_DESCRIPTORS.has((err as NodeJS.ErrnoException).code ?? '');
    }
  },
  free() {
    const limit = (lastLimit = readOpenFilesLimit()?.soft ?? lastLimit);
    if (limit === undefined) return undefined;
    try {
      return { free: limit - readdirSync('/proc/self/fd').length, limit };
    } catch (err) {
      return OUT_OF_DESCRIPTORS.has((err as NodeJS.ErrnoException).code ?? '') ? { free: 0, limit } : undefined;
    }
  },
};
