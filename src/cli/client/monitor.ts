// `monitor`: Consul's `consul monitor [-log-level] [-log-json]`: prints the agent's log as it is
// written (GET /v1/agent/monitor) until interrupted (exit 0) or the agent ends it (Consul's
// message, exit 1).
import type { ClientCommand } from './command.js';

export const monitorCommands: ClientCommand[] = [
  {
    name: 'monitor',
    synopsis: 'Stream logs from an agent',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      'log-level': {
        kind: 'string',
        doc: "Log level of the agent to stream: trace, debug, info, warn or err (default info), below the agent's own too.",
      },
      'log-json': { kind: 'bool', doc: "The agent's log lines as JSON." },
    },
    async run({ api, flags, io }) {
      const query = new URLSearchParams({
        loglevel: typeof flags['log-level'] === 'string' ? flags['log-level'] : 'INFO',
      });
      if (flags['log-json'] === true) query.set('logjson', 'true');
      const stop = new AbortController();
      const interrupted = (): void => stop.abort();
      process.once('SIGINT', interrupted);
      process.once('SIGTERM', interrupted);
      try {
        const how = await api.stream(`/v1/agent/monitor?${query.toString()}`, 'starting monitor', io.out, stop.signal);
        if (how === 'stopped') return 0;
        io.out('\nRemote side ended the monitor! This usually means that the\nremote side has exited or crashed.\n');
        return 1;
      } finally {
        process.off('SIGINT', interrupted);
        process.off('SIGTERM', interrupted);
      }
    },
  },
];
