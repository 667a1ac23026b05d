// `event`: Consul's `consul event`, same flags, same lines: fires a user event with an optional
// payload (the one argument) and prints its ID; the filters are checked here first, as Consul does.
import { usageError } from '../usage-error.js';
import type { ClientCommand } from './command.js';

const FILTERS = [
  ['node', 'node'],
  ['service', 'service'],
  ['tag', 'tag'],
] as const;

export const eventCommands: ClientCommand[] = [
  {
    name: 'event',
    synopsis: 'Fire a new event',
    argsUsage: '[payload]',
    arity: [0, 1],
    flags: {
      name: { kind: 'string', doc: 'Name of the event.' },
      node: { kind: 'string', doc: 'Regular expression to filter on node names.' },
      service: { kind: 'string', doc: 'Regular expression to filter on service instances.' },
      tag: { kind: 'string', doc: 'Regular expression to filter on service tags. Must be used with -service.' },
    },
    async run({ api, flags, args, io }) {
      const text = (flag: string): string => (typeof flags[flag] === 'string' ? (flags[flag] as string) : '');
      const name = text('name');
      if (name === '') throw usageError('CLI_FLAG_MISSING', { detail: 'Event name must be specified' });
      const query = new URLSearchParams();
      for (const [flag, param] of FILTERS) {
        const filter = text(flag);
        if (filter === '') continue;
        try {
          new RegExp(filter, 'u');
        } catch (err) {
          throw usageError('CLI_FLAG_VALUE', {
            flag,
            value: filter,
            reason: `Failed to compile ${flag} filter regexp: ${(err as Error).message}`,
          });
        }
        query.set(param, filter);
      }
      if (text('tag') !== '' && text('service') === '')
        throw usageError('CLI_FLAG_MISSING', { detail: 'Cannot provide tag filter without service filter.' });
      await api.json('GET', '/v1/agent/self', undefined, 'querying Consul agent');
      const qs = query.size === 0 ? '' : `?${query.toString()}`;
      const event = await api.json<{ ID: string }>(
        'PUT',
        `/v1/event/fire/${encodeURIComponent(name)}${qs}`,
        args[0],
        'firing event',
      );
      io.out(`Event ID: ${event.ID}\n`);
      return 0;
    },
  },
];
