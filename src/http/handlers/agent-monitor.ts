// GET /v1/agent/monitor: the agent's log, streamed as it is written (Consul's AgentMonitor), at the
// level asked (`?loglevel`, INFO by default; below the agent's own level too), in Consul's text
// lines or, with `?logjson`, the agent's JSON lines. A line is queued when it is logged and sent on
// the next turn of the event loop, with the others queued meanwhile: the call that logged never
// writes to a socket. A reader slower than the log loses lines past MONITOR_BUFFER_LINES, counted
// and warned of when it goes, as Consul's monitor drops them.
import type { AgentInfo } from '../../agent-info.js';
import { agentError } from '../../core/errors.js';
import type { Logger, LogLevel, LogTap } from '../../core/log.js';
import { formatTextLine } from '../../core/log-text.js';
import { TEXT_TYPE, type Reply, type ReplyStream, type StreamSink } from '../reply.js';
import type { Route } from '../routes.js';

/** Lines held for one reader before new ones are dropped: Consul's monitor buffer (agent/monitor/monitor.go). */
const MONITOR_BUFFER_LINES = 512;

/** Consul's level names (logging.ValidateLogLevel), any case; ERR is error. */
const LEVELS: Readonly<Record<string, LogLevel>> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERR: 'error',
  ERROR: 'error',
};

/** The streams open now, so that the agent ends them when it stops. */
export class LogMonitors {
  private readonly open = new Set<MonitorStream>();

  constructor(
    private readonly tap: LogTap | undefined,
    private readonly log: Logger,
  ) {}

  stream(level: LogLevel, json: boolean): ReplyStream {
    const stream = new MonitorStream(this.tap, level, json, this.log, (s) => this.open.delete(s));
    this.open.add(stream);
    return stream;
  }

  /** Ends every stream (the agent stops): its reader sees the body end. */
  close(): void {
    for (const stream of [...this.open]) stream.end();
  }
}

class MonitorStream implements ReplyStream {
  private sink: StreamSink | undefined;
  private untap: (() => void) | undefined;
  private readonly queue: string[] = [];
  private dropped = 0;
  private scheduled = false;
  /** The socket holds unsent bytes: lines wait until it drains. */
  private blocked = false;
  private closed = false;

  constructor(
    private readonly tap: LogTap | undefined,
    private readonly level: LogLevel,
    private readonly json: boolean,
    private readonly log: Logger,
    private readonly forget: (stream: MonitorStream) => void,
  ) {}

  open(sink: StreamSink): void {
    if (this.closed) return;
    this.sink = sink;
    this.untap = this.tap?.tap(this.level, this.take);
  }

  /** Called inside the logging call: queue, and nothing more. */
  private readonly take = (line: string): void => {
    if (this.closed) return;
    if (this.queue.length >= MONITOR_BUFFER_LINES) {
      this.dropped++;
      return;
    }
    this.queue.push(line);
    this.schedule();
  };

  private schedule(): void {
    if (this.scheduled || this.blocked) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  private readonly flush = (): void => {
    this.scheduled = false;
    const sink = this.sink;
    if (this.closed || sink === undefined || this.queue.length === 0) return;
    const text = this.queue.map((line) => (this.json ? line : formatTextLine(line))).join('');
    this.queue.length = 0;
    if (sink.write(text)) return;
    this.blocked = true;
    sink.drained(() => {
      this.blocked = false;
      if (this.queue.length > 0) this.schedule();
    });
  };

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.untap?.();
    this.forget(this);
    // Untapped first: this line goes to the other readers, not back into this one.
    if (this.dropped > 0) this.log.warn({ dropped_count: this.dropped }, 'Dropped logs during monitor request');
  }

  /** Sends what is queued, then ends the body. */
  end(): void {
    if (this.closed) return;
    const sink = this.sink;
    if (sink !== undefined && this.queue.length > 0) {
      this.blocked = false;
      this.flush();
    }
    this.close();
    sink?.end();
  }
}

export interface MonitorDeps {
  readonly info: AgentInfo;
  readonly monitors: LogMonitors;
}

export function agentMonitorRoutes({ info, monitors }: MonitorDeps): Route[] {
  return [
    {
      path: '/v1/agent/monitor',
      methods: {
        GET: {
          acl: { resource: 'agent', access: 'read', name: () => info.nodeName },
          handler: (req): Reply => {
            const asked = req.query.get('loglevel') || 'INFO';
            const level = LEVELS[asked.toUpperCase()];
            if (level === undefined) throw agentError('AGENT_MONITOR_LOG_LEVEL', { level: asked });
            return { status: 200, contentType: TEXT_TYPE, stream: monitors.stream(level, req.query.has('logjson')) };
          },
        },
      },
    },
  ];
}
