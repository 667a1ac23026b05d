// `watch`: Consul's `consul watch`, same flags, same lines. Without a handler it prints the view's
// JSON once (Go's four-space indent) and exits; with one it runs the handler (through the shell
// unless -shell=false) with the JSON on standard input and CONSUL_INDEX set, first for what is there
// and then on every change, following the view with blocking queries, until interrupted or until a
// handler fails. An event watch hands on only the events after the last one handed on, as Consul's.
import { spawn } from 'node:child_process';
import { isDeepStrictEqual } from 'node:util';
import { eventIndex } from '../../events/user-event.js';
import { usageError } from '../usage-error.js';
import { answerIndex, type ApiClient } from './api.js';
import { SERVER_FLAGS, type ClientCommand } from './command.js';

type Flags = Readonly<Record<string, unknown>>;

/** One read of the view: its blocking index and the data a handler gets. */
type Read = (api: ApiClient, index: string) => Promise<{ index: string; data: unknown }>;

const text = (flags: Flags, name: string): string => (typeof flags[name] === 'string' ? (flags[name] as string) : '');

/** Builds the read of `-type`, refusing a missing or conflicting parameter in Consul's words. */
function viewOf(type: string, flags: Flags): Read {
  const q = (query: Record<string, string>): string => {
    const s = new URLSearchParams(Object.entries(query).filter(([, v]) => v !== '')).toString();
    return s === '' ? '' : `?${s}`;
  };
  const path = (p: string) => p.split('/').map(encodeURIComponent).join('/');
  switch (type) {
    case 'key': {
      const key = text(flags, 'key');
      if (key === '') throw watchError('Must specify a single key to watch');
      // A missing key is null to the handler, as Consul's watch hands it on.
      return blocking(`/v1/kv/${path(key)}`, (body) => (Array.isArray(body) ? (body[0] ?? null) : null), [404]);
    }
    case 'keyprefix': {
      const prefix = text(flags, 'prefix');
      if (prefix === '') throw watchError('Must specify a single prefix to watch');
      return blocking(`/v1/kv/${path(prefix)}?recurse`, (body) => body ?? [], [404]);
    }
    case 'services':
      return blocking('/v1/catalog/services', (body) => body);
    case 'nodes':
      return blocking('/v1/catalog/nodes', (body) => body);
    case 'service': {
      const service = text(flags, 'service');
      if (service === '') throw watchError('Must specify a single service to watch');
      const passing = text(flags, 'passingonly');
      if (passing !== '' && !['true', 'false', '1', '0', 't', 'f', 'TRUE', 'FALSE', 'True', 'False'].includes(passing))
        throw watchError(
          `Failed to parse passingonly flag: strconv.ParseBool: parsing ${JSON.stringify(passing)}: invalid syntax`,
        );
      const passingOnly = ['true', '1', 't', 'TRUE', 'True'].includes(passing);
      const query = q({ tag: text(flags, 'tag'), ...(passingOnly ? { passing: '1' } : {}) });
      return blocking(`/v1/health/service/${encodeURIComponent(service)}${query}`, (body) => body);
    }
    case 'checks': {
      const [service, state] = [text(flags, 'service'), text(flags, 'state')];
      if (service !== '' && state !== '') throw watchError('Cannot specify service and state');
      return service !== ''
        ? blocking(`/v1/health/checks/${encodeURIComponent(service)}`, (body) => body)
        : blocking(`/v1/health/state/${encodeURIComponent(state === '' ? 'any' : state)}`, (body) => body);
    }
    case 'event':
      return eventRead(text(flags, 'name'));
    default:
      throw watchError(`Unsupported watch type: ${type}`);
  }
}

function watchError(detail: string): Error {
  return usageError('CLI_FLAG_VALUE', { flag: 'type', value: '', reason: detail });
}

function blocking(path: string, take: (body: unknown) => unknown, empty: readonly number[] = []): Read {
  return async (api, index) => {
    const sep = path.includes('?') ? '&' : '?';
    const answer = await api.call('GET', index === '' ? path : `${path}${sep}index=${index}`);
    if (empty.includes(answer.status)) return { index: answerIndex(answer), data: take(undefined) };
    if (answer.status !== 200) throw new Error(`Unexpected response code: ${answer.status} (${answer.text.trim()})`);
    return { index: answerIndex(answer), data: take(JSON.parse(answer.text) as unknown) };
  };
}

/** Consul's event watch: the list, less the events up to the one the last index named. */
function eventRead(name: string): Read {
  const list = blocking(`/v1/event/list${name === '' ? '' : `?name=${encodeURIComponent(name)}`}`, (b) => b);
  return async (api, index) => {
    const read = await list(api, index);
    const events = read.data as { ID: string }[];
    const seen = events.findIndex((e) => String(eventIndex(e.ID)) === index);
    return { index: read.index, data: seen < 0 ? events : events.slice(seen + 1) };
  };
}

/** Runs the handler with `data` on its standard input; resolves to its exit status. */
function runHandler(args: readonly string[], shell: boolean, index: string, data: unknown): Promise<number> {
  const [command, ...rest] = shell ? [process.env.SHELL || '/bin/sh', '-c', args.join(' ')] : args;
  const child = spawn(command!, rest, {
    stdio: ['pipe', 'inherit', 'inherit'],
    env: { ...process.env, CONSUL_INDEX: index },
  });
  child.stdin.on('error', () => {});
  child.stdin.end(`${JSON.stringify(data)}\n`);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
  });
}

export const watchCommands: ClientCommand[] = [
  {
    name: 'watch',
    synopsis: 'Watch for changes in Consul',
    argsUsage: '[child...]',
    arity: [0, Number.POSITIVE_INFINITY],
    flags: {
      type: {
        kind: 'string',
        doc: 'Specifies the watch type. One of key, keyprefix, services, nodes, service, checks, or event.',
      },
      key: { kind: 'string', doc: "Specifies the key to watch. Only for 'key' type." },
      prefix: { kind: 'string', doc: "Specifies the key prefix to watch. Only for 'keyprefix' type." },
      service: {
        kind: 'string',
        doc: "Specifies the service to watch. Required for 'service' type, optional for 'checks' type.",
      },
      tag: { kind: 'string', doc: "Specifies the service tag to filter on. Optional for 'service' type." },
      passingonly: {
        kind: 'string',
        doc: "Specifies if only hosts passing all checks are displayed. Optional for 'service' type, must be one of `[true|false]`. Defaults false.",
      },
      shell: {
        kind: 'bool',
        doc: 'Use a shell to run the command (can set a custom shell via the SHELL environment variable).',
      },
      state: { kind: 'string', doc: "Specifies the states to watch. Optional for 'checks' type." },
      name: { kind: 'string', doc: "Specifies an event name to watch. Only for 'event' type." },
      ...SERVER_FLAGS,
    },
    async run({ api, flags, args, io }) {
      const type = text(flags, 'type');
      if (type === '') throw usageError('CLI_FLAG_MISSING', { detail: 'Watch type must be specified' });
      const read = viewOf(type, flags);
      await api.json('GET', '/v1/agent/self', undefined, 'querying Consul agent');
      const first = await read(api, '');
      if (args.length === 0) {
        io.out(`${JSON.stringify(first.data, null, 4)}\n`);
        return 0;
      }
      const shell = flags.shell !== false;
      // Interrupted: the watch ends at once, its blocking read left behind (Consul's exits 0).
      const stopped = new Promise<undefined>((resolve) => {
        process.once('SIGINT', () => resolve(undefined));
        process.once('SIGTERM', () => resolve(undefined));
      });
      let last = first;
      let status = await runHandler(args, shell, first.index, first.data);
      while (status === 0) {
        const next = await Promise.race([read(api, last.index), stopped]);
        if (next === undefined) return 0;
        if (next.index === last.index || isDeepStrictEqual(next.data, last.data)) {
          last = { index: next.index, data: last.data };
          continue;
        }
        last = next;
        status = await runHandler(args, shell, next.index, next.data);
      }
      if (status !== 0) {
        io.err(`Error executing handler: exit status ${status}\n`);
        return 1;
      }
      return 0;
    },
  },
];
