// `kv get|put|delete`, worded as Consul's CLI words them.
import { ClientError, unexpectedAnswer } from './api.js';
import { valueOf, type ClientCommand } from './command.js';

const key = (k: string): string => k.split('/').map(encodeURIComponent).join('/');

export const kvCommands: ClientCommand[] = [
  {
    name: 'kv get',
    synopsis: 'Reads a key, or every key under a prefix with -recurse',
    argsUsage: 'KEY',
    arity: [0, 1],
    flags: { recurse: { kind: 'bool', doc: 'Every key under the prefix, as key:value lines.' } },
    async run({ api, flags, args, io }) {
      const k = args[0] ?? '';
      if (flags.recurse === true) {
        const answer = await api.call('GET', `/v1/kv/${key(k)}?recurse`);
        if (answer.status === 404) return 0;
        if (answer.status !== 200) throw unexpectedAnswer(answer, 'querying the agent');
        for (const entry of JSON.parse(answer.text) as { Key: string; Value: string | null }[]) {
          io.out(`${entry.Key}:${entry.Value === null ? '' : Buffer.from(entry.Value, 'base64').toString()}\n`);
        }
        return 0;
      }
      if (k === '') throw new ClientError('Error! Missing KEY argument');
      const answer = await api.call('GET', `/v1/kv/${key(k)}?raw`);
      if (answer.status === 404) {
        io.err(`Error! No key exists at: ${k}\n`);
        return 1;
      }
      if (answer.status !== 200) throw unexpectedAnswer(answer, 'querying the agent');
      io.out(`${answer.text}\n`);
      return 0;
    },
  },
  {
    name: 'kv put',
    synopsis: 'Writes a key (VALUE: text, @file, or - for standard input)',
    argsUsage: 'KEY [VALUE]',
    arity: [1, 2],
    flags: {
      cas: { kind: 'bool', doc: 'Check-and-set: write only if the key is still at -modify-index.' },
      'modify-index': { kind: 'int', doc: 'The ModifyIndex -cas compares (0: only if the key does not exist).' },
      flags: { kind: 'int', doc: 'Unsigned integer stored with the key.' },
    },
    async run({ api, flags, args, io }) {
      const k = args[0] as string;
      const value = await valueOf(io, args[1] ?? '');
      const query: string[] = [];
      if (flags.cas === true) query.push(`cas=${Number(flags['modify-index'] ?? 0)}`);
      if (flags.flags !== undefined) query.push(`flags=${Number(flags.flags)}`);
      const answer = await api.expectOk('PUT', `/v1/kv/${key(k)}${query.length > 0 ? `?${query.join('&')}` : ''}`, value, 'writing to the KV store');
      if (answer.text.trim() !== 'true') {
        io.err(`Error! Did not write to ${k}: CAS failed\n`);
        return 1;
      }
      io.out(`Success! Data written to: ${k}\n`);
      return 0;
    },
  },
  {
    name: 'kv delete',
    synopsis: 'Deletes a key, or every key under a prefix with -recurse',
    argsUsage: 'KEY',
    arity: [1, 1],
    flags: {
      recurse: { kind: 'bool', doc: 'Delete every key under the prefix.' },
      cas: { kind: 'bool', doc: 'Check-and-set: delete only if the key is still at -modify-index.' },
      'modify-index': { kind: 'int', doc: 'The ModifyIndex -cas compares.' },
    },
    async run({ api, flags, args, io }) {
      const k = args[0] as string;
      if (flags.recurse === true && flags.cas === true) throw new ClientError('Cannot specify both -cas and -recurse!');
      const query = flags.recurse === true ? '?recurse' : flags.cas === true ? `?cas=${Number(flags['modify-index'] ?? 0)}` : '';
      const answer = await api.expectOk('DELETE', `/v1/kv/${key(k)}${query}`, undefined, 'deleting from the KV store');
      if (answer.text.trim() === 'false') {
        io.err(`Error! Did not delete key ${k}: CAS failed\n`);
        return 1;
      }
      io.out(flags.recurse === true ? `Success! Deleted keys with prefix: ${k}\n` : `Success! Deleted key: ${k}\n`);
      return 0;
    },
  },
];
