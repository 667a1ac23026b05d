// A Logger that keeps what it is given, for tests that assert on log lines (a torn WAL tail, a 500).
import type { Logger } from '../../src/core/log.js';

export interface LogEntry {
  readonly level: 'trace' | 'debug' | 'info' | 'warn' | 'error';
  readonly obj: Record<string, unknown>;
  readonly msg: string | undefined;
}

export interface RecordingLogger extends Logger {
  readonly entries: LogEntry[];
}

export function recordingLogger(entries: LogEntry[] = []): RecordingLogger {
  const at =
    (level: LogEntry['level']) =>
    (obj: object, msg?: string): void => {
      entries.push({ level, obj: obj as Record<string, unknown>, msg });
    };
  return {
    entries,
    trace: at('trace'),
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: () => recordingLogger(entries),
  };
}
