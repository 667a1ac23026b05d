// `login` and `logout`, as Consul's: login trades the bearer token in -bearer-token-file for an ACL
// token from the named auth method and writes its SecretID to -token-sink-file (mode 0600),
// printing nothing; logout deletes the token the command runs with (a login token).
import { writeFile } from 'node:fs/promises';
import { usageError } from '../usage-error.js';
import { fileText, type ClientCommand } from './command.js';

function required(flags: Readonly<Record<string, unknown>>, name: string): string {
  const value = flags[name];
  if (typeof value !== 'string' || value === '') {
    throw usageError('CLI_FLAG_MISSING', { detail: `Missing required '-${name}' flag` });
  }
  return value;
}

/** -meta key=value pairs, as Consul's flag map reads them. */
function metaOf(raw: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of Array.isArray(raw) ? (raw as string[]) : []) {
    const eq = pair.indexOf('=');
    if (eq === -1) throw usageError('CLI_FLAG_VALUE', { value: pair, flag: 'meta', reason: 'missing "="' });
    out[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return out;
}

export const loginCommands: ClientCommand[] = [
  {
    name: 'login',
    synopsis: 'Trades a bearer token (a JWT) for an ACL token from an auth method',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      method: { kind: 'string', doc: 'The auth method to log in with (required).' },
      'bearer-token-file': { kind: 'string', doc: 'A file holding the bearer token (required).' },
      'token-sink-file': { kind: 'string', doc: "The file the new token's SecretID is written to (required)." },
      meta: { kind: 'list', doc: "key=value for the token's description; repeatable." },
    },
    async run({ api, flags, io }) {
      const method = required(flags, 'method');
      const sink = required(flags, 'token-sink-file');
      const bearerFile = required(flags, 'bearer-token-file');
      const bearer = (await fileText(io, bearerFile, 'Error reading bearer token file')).trim();
      if (bearer === '') throw usageError('CLI_FLAG_MISSING', { detail: `No bearer token found in ${bearerFile}` });
      const body = { AuthMethod: method, BearerToken: bearer, Meta: metaOf(flags.meta) };
      const token = await api.json<{ SecretID: string }>('POST', '/v1/acl/login', JSON.stringify(body), 'logging in');
      await writeFile(sink, token.SecretID, { mode: 0o600 });
      return 0;
    },
  },
  {
    name: 'logout',
    synopsis: 'Deletes the login token the command runs with',
    argsUsage: '',
    arity: [0, 0],
    flags: {},
    async run({ api }) {
      await api.expectOk('POST', '/v1/acl/logout', undefined, 'destroying token');
      return 0;
    },
  },
];
