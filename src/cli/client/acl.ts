// `acl bootstrap`, `acl policy create|list|read|delete`, `acl token create|list|read|delete`,
// printed as Consul's CLI prints tokens and policies; `acl role` and `acl templated-policy` are in
// acl/.
import { usageError } from '../usage-error.js';
import type { ApiClient } from './api.js';
import {
  FORMAT_FLAG,
  SERVER_FLAGS,
  formatOf,
  jsonText,
  record,
  valueOf,
  type ClientCommand,
  type Context,
} from './command.js';
import {
  LINK_FLAGS,
  linksText,
  nodeIdentities,
  policyLinks,
  roleLinks,
  serviceIdentities,
  templatedPolicies,
  type Links,
} from './acl/links.js';
import { aclRoleCommands } from './acl/roles.js';
import { aclTemplatedCommands } from './acl/templated.js';

interface Token extends Links {
  AccessorID: string;
  SecretID: string;
  Description: string;
  Local: boolean;
  CreateTime: string;
  ExpirationTime?: string;
  Roles?: { ID: string; Name: string }[] | null;
}

interface Policy {
  ID: string;
  Name: string;
  Description: string;
  Datacenters?: string[] | null;
  Rules?: string;
}

function tokenText(t: Token): string {
  const rows: [string, string][] = [
    ['AccessorID', t.AccessorID],
    ['SecretID', t.SecretID],
    ['Description', t.Description],
    ['Local', String(t.Local)],
    ['Create Time', t.CreateTime],
  ];
  if (t.ExpirationTime !== undefined) rows.push(['Expiration Time', t.ExpirationTime]);
  const roles = t.Roles ?? [];
  const { Policies, ServiceIdentities, NodeIdentities, TemplatedPolicies } = t;
  return `${record(rows)}\n${linksText({ Policies })}${roles.length > 0 ? `Roles:\n${roles.map((r) => `   ${r.ID} - ${r.Name}\n`).join('')}` : ''}${linksText({ ServiceIdentities, NodeIdentities, TemplatedPolicies })}`;
}

function policyText(p: Policy, indent = ''): string {
  return `${record(
    [
      ['ID', p.ID],
      ['Name', p.Name],
      ['Description', p.Description],
      ['Datacenters', (p.Datacenters ?? []).join(', ')],
    ],
    indent,
  )}\n${p.Rules === undefined ? '' : `${indent}Rules:\n${p.Rules}\n`}`;
}

/** -id or -name, for the policy commands that take either. */
async function policyPath(api: ApiClient, flags: Readonly<Record<string, unknown>>): Promise<string> {
  if (typeof flags.id === 'string') return `/v1/acl/policy/${encodeURIComponent(flags.id)}`;
  if (typeof flags.name === 'string') {
    const policy = await api.json<Policy>(
      'GET',
      `/v1/acl/policy/name/${encodeURIComponent(flags.name)}`,
      undefined,
      'reading the policy',
    );
    return `/v1/acl/policy/${policy.ID}`;
  }
  throw usageError('CLI_FLAG_MISSING', { detail: 'Must specify either the -id or -name parameters' });
}

/** The printer -format asks for (checked before anything is sent): `pretty`, else Consul's JSON. */
function printer<T>(flags: Context['flags'], pretty: (value: T) => string): (value: T) => string {
  return formatOf(flags) === 'json' ? jsonText : pretty;
}

const idOrName = {
  id: { kind: 'string', doc: 'The policy ID.' },
  name: { kind: 'string', doc: 'The policy name.' },
} as const;

export const aclCommands: ClientCommand[] = [
  {
    name: 'acl bootstrap',
    synopsis: 'Creates the initial management token',
    argsUsage: '',
    arity: [0, 0],
    flags: { ...FORMAT_FLAG },
    async run({ api, flags, io }) {
      const show = printer(flags, tokenText);
      io.out(show(await api.json<Token>('PUT', '/v1/acl/bootstrap', undefined, 'bootstrapping ACLs')));
      return 0;
    },
  },
  {
    name: 'acl policy create',
    synopsis: 'Creates a policy',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      name: { kind: 'string', doc: "The new policy's name (required)." },
      description: { kind: 'string', doc: 'A description.' },
      rules: { kind: 'string', doc: 'The rules, in HCL or JSON: text, @file, or - for standard input.' },
      'valid-datacenter': { kind: 'list', doc: 'A datacenter the policy is valid in; repeatable.' },
      ...FORMAT_FLAG,
    },
    async run({ api, flags, io }) {
      const show = printer(flags, (p: Policy) => policyText(p));
      if (typeof flags.name !== 'string')
        throw usageError('CLI_FLAG_MISSING', { detail: "Missing required '-name' flag" });
      const body = {
        Name: flags.name,
        Description: typeof flags.description === 'string' ? flags.description : '',
        Rules: typeof flags.rules === 'string' ? await valueOf(io, flags.rules) : '',
        ...(Array.isArray(flags['valid-datacenter']) ? { Datacenters: flags['valid-datacenter'] } : {}),
      };
      io.out(show(await api.json<Policy>('PUT', '/v1/acl/policy', JSON.stringify(body), 'creating the policy')));
      return 0;
    },
  },
  {
    name: 'acl policy list',
    synopsis: 'Lists policies',
    argsUsage: '',
    arity: [0, 0],
    flags: { ...FORMAT_FLAG, ...SERVER_FLAGS },
    async run({ api, flags, io }) {
      const show = printer(flags, (all: Policy[]) =>
        all.map(({ Rules: _, ...p }) => `${p.Name}:\n${policyText(p, '   ')}`).join(''),
      );
      io.out(show(await api.json<Policy[]>('GET', '/v1/acl/policies', undefined, 'listing policies')));
      return 0;
    },
  },
  {
    name: 'acl policy read',
    synopsis: 'Shows a policy (-id or -name)',
    argsUsage: '',
    arity: [0, 0],
    flags: { ...idOrName, ...FORMAT_FLAG, ...SERVER_FLAGS },
    async run({ api, flags, io }) {
      const show = printer(flags, (p: Policy) => policyText(p));
      io.out(show(await api.json<Policy>('GET', await policyPath(api, flags), undefined, 'reading the policy')));
      return 0;
    },
  },
  {
    name: 'acl policy delete',
    synopsis: 'Deletes a policy (-id or -name)',
    argsUsage: '',
    arity: [0, 0],
    flags: idOrName,
    async run({ api, flags, io }) {
      const path = await policyPath(api, flags);
      await api.expectOk('DELETE', path, undefined, 'deleting the policy');
      io.out(`Policy "${decodeURIComponent(path.slice(path.lastIndexOf('/') + 1))}" deleted successfully\n`);
      return 0;
    },
  },
  {
    name: 'acl token create',
    synopsis: 'Creates a token',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      description: { kind: 'string', doc: 'A description.' },
      ...LINK_FLAGS,
      'role-id': { kind: 'list', doc: 'A role by ID; repeatable.' },
      'role-name': { kind: 'list', doc: 'A role by name; repeatable.' },
      secret: { kind: 'string', doc: 'The SecretID to use instead of a generated one.' },
      local: { kind: 'bool', doc: 'A token local to this datacenter.' },
      'expires-ttl': { kind: 'string', doc: 'How long the token lives (a duration such as 8h).' },
      ...FORMAT_FLAG,
    },
    async run({ api, flags, io }) {
      const show = printer(flags, tokenText);
      const body = {
        Description: typeof flags.description === 'string' ? flags.description : '',
        Policies: policyLinks(flags),
        Roles: roleLinks(flags),
        ServiceIdentities: serviceIdentities(flags),
        NodeIdentities: nodeIdentities(flags),
        TemplatedPolicies: templatedPolicies(flags),
        Local: flags.local === true,
        ...(typeof flags.secret === 'string' ? { SecretID: flags.secret } : {}),
        ...(typeof flags['expires-ttl'] === 'string' ? { ExpirationTTL: flags['expires-ttl'] } : {}),
      };
      io.out(show(await api.json<Token>('PUT', '/v1/acl/token', JSON.stringify(body), 'creating the token')));
      return 0;
    },
  },
  {
    name: 'acl token list',
    synopsis: 'Lists tokens',
    argsUsage: '',
    arity: [0, 0],
    flags: { ...FORMAT_FLAG, ...SERVER_FLAGS },
    async run({ api, flags, io }) {
      const show = printer(flags, (tokens: Token[]) => tokens.map(tokenText).join('\n'));
      io.out(show(await api.json<Token[]>('GET', '/v1/acl/tokens', undefined, 'listing tokens')));
      return 0;
    },
  },
  {
    name: 'acl token read',
    synopsis: 'Shows a token (-id ACCESSOR, or -self)',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      id: { kind: 'string', doc: "The token's AccessorID." },
      self: { kind: 'bool', doc: 'The token the command runs with.' },
      ...FORMAT_FLAG,
      ...SERVER_FLAGS,
    },
    async run({ api, flags, io }) {
      const show = printer(flags, tokenText);
      const path =
        flags.self === true
          ? '/v1/acl/token/self'
          : typeof flags.id === 'string'
            ? `/v1/acl/token/${encodeURIComponent(flags.id)}`
            : undefined;
      if (path === undefined) throw usageError('CLI_FLAG_MISSING', { detail: 'Must specify the -id parameter' });
      io.out(show(await api.json<Token>('GET', path, undefined, 'reading the token')));
      return 0;
    },
  },
  {
    name: 'acl token delete',
    synopsis: 'Deletes a token (-id ACCESSOR)',
    argsUsage: '',
    arity: [0, 0],
    flags: { id: { kind: 'string', doc: "The token's AccessorID." } },
    async run({ api, flags, io }) {
      if (typeof flags.id !== 'string')
        throw usageError('CLI_FLAG_MISSING', { detail: 'Must specify the -id parameter' });
      await api.expectOk('DELETE', `/v1/acl/token/${encodeURIComponent(flags.id)}`, undefined, 'deleting the token');
      io.out(`Token "${flags.id}" deleted successfully\n`);
      return 0;
    },
  },
  ...aclRoleCommands,
  ...aclTemplatedCommands,
];
