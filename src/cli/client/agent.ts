// `members`, `reload`, `info`, and `connect ca get-config|set-config`.
import { usageError } from '../usage-error.js';
import { SERVER_FLAGS, byBytes, fileText, table, type ClientCommand } from './command.js';

interface Member {
  Name: string;
  Addr: string;
  Port: number;
  Status: number;
  Tags: Record<string, string>;
}

const STATUS = ['none', 'alive', 'leaving', 'left', 'failed'];

export const agentCommands: ClientCommand[] = [
  {
    name: 'members',
    synopsis: 'Lists the members of the cluster',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      wan: { kind: 'bool', doc: 'The WAN members (servers, named node.dc).' },
      detailed: { kind: 'bool', doc: 'Provides detailed information about nodes.' },
      status: {
        kind: 'string',
        doc: 'If provided, output is filtered to only nodes matching the regular expression for status.',
      },
    },
    async run({ api, flags, io }) {
      const filter = typeof flags.status === 'string' ? flags.status : '.*';
      let statusRe: RegExp;
      try {
        statusRe = new RegExp(filter, 'u');
      } catch (err) {
        throw usageError('CLI_FLAG_VALUE', {
          flag: 'status',
          value: filter,
          reason: `Failed to compile status regexp: ${(err as Error).message}`,
        });
      }
      const all = await api.json<Member[]>(
        'GET',
        `/v1/agent/members${flags.wan === true ? '?wan=1' : ''}`,
        undefined,
        'retrieving members',
      );
      const statusOf = (m: Member): string => STATUS[m.Status] ?? 'unknown';
      // As Consul's: servers first, then by name; the partition and segment tags as it shows them.
      const members = all
        .filter((m) => statusRe.test(statusOf(m)))
        .map((m) => ({
          ...m,
          Tags: <Record<string, string>>{
            ...m.Tags,
            partition: m.Tags.partition || 'default',
            segment: m.Tags.role === 'consul' ? '<all>' : m.Tags.segment || '<default>',
          },
        }))
        .sort((a, b) => Number(b.Tags.role === 'consul') - Number(a.Tags.role === 'consul') || byBytes(a.Name, b.Name));
      // No member matches: Consul's exit status 2, nothing printed.
      if (members.length === 0) return 2;
      if (flags.detailed === true) {
        const rows = members.map((m) => [
          m.Name,
          `${m.Addr}:${m.Port}`,
          statusOf(m),
          Object.keys(m.Tags)
            .sort(byBytes)
            .map((k) => `${k}=${m.Tags[k]}`)
            .join(','),
        ]);
        io.out(`${table([['Node', 'Address', 'Status', 'Tags'], ...rows])}\n`);
        return 0;
      }
      const rows = members.map((m) => [
        m.Name,
        `${m.Addr}:${m.Port}`,
        statusOf(m),
        m.Tags.role === 'consul' ? 'server' : 'client',
        (m.Tags.build ?? '').split(':')[0] ?? '',
        m.Tags.vsn ?? '',
        m.Tags.dc ?? '',
        m.Tags.partition ?? '',
        m.Tags.segment ?? '',
      ]);
      io.out(
        `${table([['Node', 'Address', 'Status', 'Type', 'Build', 'Protocol', 'DC', 'Partition', 'Segment'], ...rows])}\n`,
      );
      return 0;
    },
  },
  {
    name: 'reload',
    synopsis: 'Makes the agent re-read its config files',
    argsUsage: '',
    arity: [0, 0],
    flags: {},
    async run({ api, io }) {
      await api.expectOk('PUT', '/v1/agent/reload', undefined, 'reloading');
      io.out('Configuration reload triggered\n');
      return 0;
    },
  },
  {
    name: 'info',
    synopsis: "Shows the agent's stats, section by section",
    argsUsage: '',
    arity: [0, 0],
    flags: {},
    async run({ api, io }) {
      const self = await api.json<{ Stats: Record<string, Record<string, string>> }>(
        'GET',
        '/v1/agent/self',
        undefined,
        'querying the agent',
      );
      for (const section of Object.keys(self.Stats).sort()) {
        io.out(`${section}:\n`);
        const values = self.Stats[section] ?? {};
        for (const key of Object.keys(values).sort()) io.out(`\t${key} = ${values[key]}\n`);
      }
      return 0;
    },
  },
  {
    name: 'connect ca get-config',
    synopsis: 'Shows the CA configuration',
    argsUsage: '',
    arity: [0, 0],
    flags: { ...SERVER_FLAGS },
    async run({ api, io }) {
      io.out(
        `${JSON.stringify(await api.json('GET', '/v1/connect/ca/configuration', undefined, 'reading the CA configuration'), null, 4)}\n`,
      );
      return 0;
    },
  },
  {
    name: 'connect ca set-config',
    synopsis: 'Changes the CA configuration (-config-file, JSON)',
    argsUsage: '',
    arity: [0, 0],
    flags: { 'config-file': { kind: 'string', doc: 'A JSON file with the new configuration (Provider, Config).' } },
    async run({ api, flags, io }) {
      if (typeof flags['config-file'] !== 'string')
        throw usageError('CLI_FLAG_MISSING', { detail: '-config-file is required' });
      const body = await fileText(io, flags['config-file'], 'Error reading config file');
      await api.expectOk('PUT', '/v1/connect/ca/configuration', body, 'setting the CA configuration');
      io.out('Configuration updated!\n');
      return 0;
    },
  },
];
