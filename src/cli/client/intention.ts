// `intention create|delete|list|check|get`, by source and destination as Consul's CLI takes them.
import { ClientError } from './api.js';
import { record, table, type ClientCommand } from './command.js';

interface Intention {
  ID?: string;
  SourceName: string;
  SourceNS?: string;
  DestinationName: string;
  DestinationNS?: string;
  Action?: string;
  Precedence: number;
  Description?: string;
  CreatedAt?: string;
}

/** The API path of the intention from `source` to `destination` (`*` for any). */
export const exactIntentionPath = (source: string, destination: string): string => `/v1/connect/intentions/exact?source=${encodeURIComponent(source)}&destination=${encodeURIComponent(destination)}`;

export const intentionCommands: ClientCommand[] = [
  {
    name: 'intention create',
    synopsis: 'Creates an intention from SRC to DST (-allow by default, or -deny)',
    argsUsage: 'SRC DST',
    arity: [2, 2],
    flags: {
      allow: { kind: 'bool', doc: 'Allow the connection (the default).' },
      deny: { kind: 'bool', doc: 'Deny the connection.' },
      description: { kind: 'string', doc: 'A description.' },
      replace: { kind: 'bool', doc: 'Replace an intention that exists for SRC and DST.' },
    },
    async run({ api, flags, args, io }) {
      const [source, destination] = args as [string, string];
      if (flags.allow === true && flags.deny === true) throw new ClientError('Only one of -allow or -deny may be specified.');
      const action = flags.deny === true ? 'deny' : 'allow';
      if (flags.replace !== true && (await api.call('GET', exactIntentionPath(source, destination))).status === 200) {
        throw new ClientError(`Error! Intention already exists for ${source} => ${destination} (use -replace to replace it)`);
      }
      const body = JSON.stringify({ Action: action, ...(typeof flags.description === 'string' ? { Description: flags.description } : {}) });
      await api.expectOk('PUT', exactIntentionPath(source, destination), body, 'creating the intention');
      io.out(`Created: ${source} => ${destination} (${action})\n`);
      return 0;
    },
  },
  {
    name: 'intention delete',
    synopsis: 'Deletes the intention from SRC to DST',
    argsUsage: 'SRC DST',
    arity: [2, 2],
    flags: {},
    async run({ api, args, io }) {
      await api.expectOk('DELETE', exactIntentionPath(args[0] as string, args[1] as string), undefined, 'deleting the intention');
      io.out('Intention deleted.\n');
      return 0;
    },
  },
  {
    name: 'intention list',
    synopsis: 'Lists intentions',
    argsUsage: '',
    arity: [0, 0],
    flags: {},
    async run({ api, io }) {
      const all = await api.json<Intention[]>('GET', '/v1/connect/intentions', undefined, 'listing intentions');
      io.out(`${table([['ID', 'Source', 'Action', 'Destination', 'Precedence'], ...all.map((x) => [x.ID ?? '', x.SourceName, x.Action ?? '', x.DestinationName, String(x.Precedence)])])}\n`);
      return 0;
    },
  },
  {
    name: 'intention check',
    synopsis: 'Says whether SRC may connect to DST (exit 0 allowed, 2 denied)',
    argsUsage: 'SRC DST',
    arity: [2, 2],
    flags: {},
    async run({ api, args, io }) {
      const path = `/v1/connect/intentions/check?source=${encodeURIComponent(args[0] as string)}&destination=${encodeURIComponent(args[1] as string)}`;
      const { Allowed } = await api.json<{ Allowed: boolean }>('GET', path, undefined, 'checking the intention');
      io.out(Allowed ? 'Allowed\n' : 'Denied\n');
      return Allowed ? 0 : 2;
    },
  },
  {
    name: 'intention get',
    synopsis: 'Shows the intention from SRC to DST',
    argsUsage: 'SRC DST',
    arity: [2, 2],
    flags: {},
    async run({ api, args, io }) {
      const x = await api.json<Intention>('GET', exactIntentionPath(args[0] as string, args[1] as string), undefined, 'reading the intention');
      const rows: [string, string][] = [
        ['Source', x.SourceName],
        ['Destination', x.DestinationName],
        ['Action', x.Action ?? ''],
        ['ID', x.ID ?? ''],
      ];
      if (x.Description) rows.push(['Description', x.Description]);
      if (x.CreatedAt) rows.push(['Created At', x.CreatedAt]);
      io.out(`${record(rows)}\n`);
      return 0;
    },
  },
];
