// `acl role create|read|update|delete|list`, with Consul's flags, printed as Consul's CLI prints
// roles. `update` merges into the role (Consul's default) unless -no-merge.
import { usageError } from '../../usage-error.js';
import type { ApiClient } from '../api.js';
import { FORMAT_FLAG, SERVER_FLAGS, formatOf, jsonText, type ClientCommand, type Context } from '../command.js';
import {
  LINK_FLAGS,
  linksText,
  nodeIdentities,
  policyLinks,
  serviceIdentities,
  templatedPolicies,
  type Link,
  type Links,
} from './links.js';

interface Role extends Links {
  ID: string;
  Name: string;
  Description: string;
}

/** Consul's role formatter: labels padded to 14 columns, then the links. */
function roleText(r: Role, indent = ''): string {
  const own = `${indent}ID:           ${r.ID}\n${indent}Name:         ${r.Name}\n${indent}Description:  ${r.Description}\n`;
  return `${own}${linksText(r, indent)}`;
}

function printer<T>(flags: Context['flags'], pretty: (value: T) => string): (value: T) => string {
  return formatOf(flags) === 'json' ? jsonText : pretty;
}

const str = (flags: Context['flags'], name: string): string | undefined =>
  typeof flags[name] === 'string' ? flags[name] : undefined;

/** -id, or -name looked up: the role's path. */
async function rolePath(api: ApiClient, flags: Context['flags']): Promise<string> {
  const id = str(flags, 'id');
  if (id !== undefined) return `/v1/acl/role/${encodeURIComponent(id)}`;
  const name = str(flags, 'name');
  if (name !== undefined) {
    const role = await api.json<Role>(
      'GET',
      `/v1/acl/role/name/${encodeURIComponent(name)}`,
      undefined,
      'reading the role',
    );
    return `/v1/acl/role/${role.ID}`;
  }
  throw usageError('CLI_FLAG_MISSING', { detail: 'Must specify either the -id or -name parameters' });
}

const idOrName = {
  id: { kind: 'string', doc: 'The role ID.' },
  name: { kind: 'string', doc: 'The role name.' },
} as const;

export const aclRoleCommands: ClientCommand[] = [
  {
    name: 'acl role create',
    synopsis: 'Creates a role',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      name: { kind: 'string', doc: "The new role's name (required)." },
      description: { kind: 'string', doc: 'A description.' },
      ...LINK_FLAGS,
      ...FORMAT_FLAG,
    },
    async run({ api, flags, io }) {
      const show = printer(flags, (r: Role) => roleText(r));
      const name = str(flags, 'name');
      if (name === undefined) throw usageError('CLI_FLAG_MISSING', { detail: "Missing required '-name' flag" });
      const body = {
        Name: name,
        Description: str(flags, 'description') ?? '',
        Policies: policyLinks(flags),
        ServiceIdentities: serviceIdentities(flags),
        NodeIdentities: nodeIdentities(flags),
        TemplatedPolicies: templatedPolicies(flags),
      };
      io.out(show(await api.json<Role>('PUT', '/v1/acl/role', JSON.stringify(body), 'creating the role')));
      return 0;
    },
  },
  {
    name: 'acl role read',
    synopsis: 'Shows a role (-id or -name)',
    argsUsage: '',
    arity: [0, 0],
    flags: { ...idOrName, ...FORMAT_FLAG, ...SERVER_FLAGS },
    async run({ api, flags, io }) {
      const show = printer(flags, (r: Role) => roleText(r));
      const id = str(flags, 'id');
      const name = str(flags, 'name');
      const path =
        id !== undefined
          ? `/v1/acl/role/${encodeURIComponent(id)}`
          : name !== undefined
            ? `/v1/acl/role/name/${encodeURIComponent(name)}`
            : undefined;
      if (path === undefined)
        throw usageError('CLI_FLAG_MISSING', { detail: 'Must specify either the -id or -name parameters' });
      io.out(show(await api.json<Role>('GET', path, undefined, 'reading the role')));
      return 0;
    },
  },
  {
    name: 'acl role update',
    synopsis: 'Updates a role (-id): adds links, or replaces them with -no-merge',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      id: { kind: 'string', doc: 'The role ID (required).' },
      name: { kind: 'string', doc: 'A new name.' },
      description: { kind: 'string', doc: 'A new description.' },
      'no-merge': { kind: 'bool', doc: "Replace the role's links instead of adding to them." },
      ...LINK_FLAGS,
      ...FORMAT_FLAG,
    },
    async run({ api, flags, io }) {
      const show = printer(flags, (r: Role) => roleText(r));
      const id = str(flags, 'id');
      if (id === undefined)
        throw usageError('CLI_FLAG_MISSING', { detail: 'Cannot update a role without specifying the -id parameter' });
      const path = `/v1/acl/role/${encodeURIComponent(id)}`;
      const current = await api.json<Role>('GET', path, undefined, 'reading the role');
      const merge = flags['no-merge'] !== true;
      const keep = <T>(old: T[] | null | undefined): T[] => (merge ? (old ?? []) : []);
      const body = {
        ID: current.ID,
        Name: str(flags, 'name') ?? current.Name,
        Description: str(flags, 'description') ?? (merge ? current.Description : ''),
        Policies: [...keep<Link>(current.Policies?.map((p) => ({ ID: p.ID }))), ...policyLinks(flags)],
        ServiceIdentities: [...keep(current.ServiceIdentities), ...serviceIdentities(flags)],
        NodeIdentities: [...keep(current.NodeIdentities), ...nodeIdentities(flags)],
        TemplatedPolicies: [...keep(current.TemplatedPolicies), ...templatedPolicies(flags)],
      };
      io.out(show(await api.json<Role>('PUT', path, JSON.stringify(body), 'updating the role')));
      return 0;
    },
  },
  {
    name: 'acl role delete',
    synopsis: 'Deletes a role (-id or -name)',
    argsUsage: '',
    arity: [0, 0],
    flags: idOrName,
    async run({ api, flags, io }) {
      const path = await rolePath(api, flags);
      await api.expectOk('DELETE', path, undefined, 'deleting the role');
      io.out(`Role "${decodeURIComponent(path.slice(path.lastIndexOf('/') + 1))}" deleted successfully\n`);
      return 0;
    },
  },
  {
    name: 'acl role list',
    synopsis: 'Lists roles',
    argsUsage: '',
    arity: [0, 0],
    flags: { ...FORMAT_FLAG, ...SERVER_FLAGS },
    async run({ api, flags, io }) {
      const show = printer(flags, (all: Role[]) => all.map((r) => `${r.Name}:\n${roleText(r, '   ')}`).join(''));
      io.out(show(await api.json<Role[]>('GET', '/v1/acl/roles', undefined, 'listing roles')));
      return 0;
    },
  },
];
