// `intention create|delete|list|check|get`, by source and destination as Consul's CLI takes them.
import { agentError } from '../../core/errors.js';
import { usageError } from '../usage-error.js';
import { SERVER_FLAGS, record, table, type ClientCommand } from './command.js';

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

/** `ns/name`, or `name` in the default namespace: Consul's Intention.SourceString/DestinationString. */
const named = (ns: string | undefined, name: string): string =>
  ns === undefined || ns === '' || ns === 'default' ? name : `${ns}/${name}`;

/** The API path of the intention from `source` to `destination` (`*` for any). */
export const exactIntentionPath = (source: string, destination: string): string =>
  `/v1/connect/intentions/exact?source=${encodeURIComponent(source)}&destination=${encodeURIComponent(destination)}`;

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
      if (flags.allow === true && flags.deny === true)
        throw usageError('CLI_FLAG_CONFLICT', { detail: 'Only one of -allow or -deny may be specified.' });
      const action = flags.deny === true ? 'deny' : 'allow';
      if (flags.replace !== true && (await api.call('GET', exactIntentionPath(source, destination))).status === 200) {
        throw agentError('CLI_INTENTION_EXISTS', { source, destination });
      }
      const body = JSON.stringify({
        Action: action,
        ...(typeof flags.description === 'string' ? { Description: flags.description } : {}),
      });
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
      await api.expectOk(
        'DELETE',
        exactIntentionPath(args[0] as string, args[1] as string),
        undefined,
        'deleting the intention',
      );
      io.out('Intention deleted.\n');
      return 0;
    },
  },
  {
    name: 'intention list',
    synopsis: 'Lists intentions',
    argsUsage: '',
    arity: [0, 0],
    flags: { ...SERVER_FLAGS },
    async run({ api, io }) {
      const all = await api.json<Intention[]>('GET', '/v1/connect/intentions', undefined, 'listing intentions');
      const rows = all.map((x) => [
        x.ID ?? '',
        named(x.SourceNS, x.SourceName),
        x.Action ?? '',
        named(x.DestinationNS, x.DestinationName),
        String(x.Precedence),
      ]);
      io.out(`${table([['ID', 'Source', 'Action', 'Destination', 'Precedence'], ...rows])}\n`);
      return 0;
    },
  },
  {
    name: 'intention check',
    synopsis: 'Says whether SRC may connect to DST (exit 0 allowed, 2 denied)',
    argsUsage: 'SRC DST',
    arity: [2, 2],
    flags: { ...SERVER_FLAGS },
    async run({ api, args, io }) {
      const path = `/v1/connect/intentions/check?source=${encodeURIComponent(args[0] as string)}&destination=${encodeURIComponent(args[1] as string)}`;
      const { Allowed } = await api.json<{ Allowed: boolean }>('GET', path, undefined, 'checking the intention');
      io.out(Allowed ? 'Allowed\n' : 'Denied\n');
      return Allowed ? 0 : 2;
    },
  },
  {
    name: 'intention get',
    synopsis: 'Shows the intention from SRC to DST, or the one with ID',
    argsUsage: 'SRC DST | ID',
    arity: [1, 2],
    flags: { ...SERVER_FLAGS },
    async run({ api, args, io }) {
      const [first, second] = args as [string, string | undefined];
      const path =
        second === undefined
          ? `/v1/connect/intentions/${encodeURIComponent(first)}`
          : exactIntentionPath(first, second);
      const x = await api.json<Intention>('GET', path, undefined, 'reading the intention');
      const rows: [string, string][] = [
        ['Source', named(x.SourceNS, x.SourceName)],
        ['Destination', named(x.DestinationNS, x.DestinationName)],
      ];
      // As Consul's `intention get`: Action and ID only when set (an intention made by name has no ID).
      if (x.Action) rows.push(['Action', x.Action]);
      if (x.ID) rows.push(['ID', x.ID]);
      if (x.Description) rows.push(['Description', x.Description]);
      if (x.CreatedAt) rows.push(['Created At', x.CreatedAt]);
      io.out(`${record(rows)}\n`);
      return 0;
    },
  },
];
