// `acl auth-method create|read|update|delete|list` and `acl binding-rule create|read|update|delete|list`,
// with Consul's flags and printed as Consul's CLI prints them (pretty, or -format json).
import { parseDuration } from '../../core/duration.js';
import { usageError } from '../usage-error.js';
import type { ApiClient } from './api.js';
import { FORMAT_FLAG, SERVER_FLAGS, formatOf, jsonText, valueOf, type ClientCommand, type Context } from './command.js';
import type { FlagSpecs } from './flags.js';

interface AuthMethod {
  Name: string;
  Type: string;
  DisplayName?: string;
  Description?: string;
  MaxTokenTTL?: string;
  TokenLocality?: string;
  Config?: Record<string, unknown>;
}

interface BindingRule {
  ID: string;
  Description: string;
  AuthMethod: string;
  Selector: string;
  BindType: string;
  BindName: string;
  BindVars?: { Name?: string };
}

const str = (flags: Context['flags'], name: string): string | undefined =>
  typeof flags[name] === 'string' ? flags[name] : undefined;

function required(flags: Context['flags'], name: string): string {
  const value = str(flags, name);
  if (value === undefined || value === '') {
    throw usageError('CLI_FLAG_MISSING', { detail: `Missing required '-${name}' flag` });
  }
  return value;
}

function printer<T>(flags: Context['flags'], pretty: (value: T) => string): (value: T) => string {
  return formatOf(flags) === 'json' ? jsonText : pretty;
}

function methodText(m: AuthMethod, indent = ''): string {
  const rows: [string, string][] = [
    ['Name', m.Name],
    ['Type', m.Type],
  ];
  if (m.DisplayName) rows.push(['DisplayName', m.DisplayName]);
  if (m.Description) rows.push(['Description', m.Description]);
  if (m.MaxTokenTTL) rows.push(['MaxTokenTTL', m.MaxTokenTTL]);
  if (m.TokenLocality) rows.push(['TokenLocality', m.TokenLocality]);
  const config = m.Config === undefined ? '' : `${indent}Config:\n${JSON.stringify(m.Config, null, 2)}\n`;
  // Consul's auth method formatter: labels in a column of 15.
  return `${rows.map(([label, value]) => `${indent}${`${label}:`.padEnd(15)}${value}`.trimEnd()).join('\n')}\n${config}`;
}

/** Consul's binding rule formatter: labels in a column of 14. */
function ruleText(r: BindingRule, indent = ''): string {
  const rows: [string, string][] = [
    ['ID', r.ID],
    ['AuthMethod', r.AuthMethod],
    ['Description', r.Description],
    ['BindType', r.BindType],
    ['BindName', r.BindName],
  ];
  if (r.BindVars !== undefined) rows.push(['BindVars', JSON.stringify(r.BindVars)]);
  rows.push(['Selector', r.Selector]);
  return rows.map(([label, value]) => `${indent}${`${label}:`.padEnd(14)}${value}`.trimEnd()).join('\n') + '\n';
}

const METHOD_FLAGS: FlagSpecs = {
  name: { kind: 'string', doc: "The auth method's name." },
  'display-name': { kind: 'string', doc: 'A name to show instead of Name.' },
  description: { kind: 'string', doc: 'A description.' },
  'max-token-ttl': { kind: 'string', doc: 'How long its login tokens live (a duration such as 8h); none by default.' },
  'token-locality': { kind: 'string', doc: "Its login tokens' locality: local (default) or global." },
  config: { kind: 'string', doc: 'The method config as JSON: text, @file, or - for standard input.' },
  ...FORMAT_FLAG,
};

/** The method fields a command's flags set (only those given). */
async function methodFields(ctx: Context): Promise<Partial<AuthMethod> & { MaxTokenTTL?: string }> {
  const { flags, io } = ctx;
  const out: Partial<AuthMethod> = {};
  const display = str(flags, 'display-name');
  if (display !== undefined) out.DisplayName = display;
  const description = str(flags, 'description');
  if (description !== undefined) out.Description = description;
  const ttl = str(flags, 'max-token-ttl');
  if (ttl !== undefined) {
    if (parseDuration(ttl) === undefined) {
      throw usageError('CLI_FLAG_VALUE', { value: ttl, flag: 'max-token-ttl', reason: 'parse error' });
    }
    out.MaxTokenTTL = ttl;
  }
  const locality = str(flags, 'token-locality');
  if (locality !== undefined) out.TokenLocality = locality;
  const config = str(flags, 'config');
  if (config !== undefined) {
    const text = await valueOf(io, config);
    try {
      out.Config = JSON.parse(text) as Record<string, unknown>;
    } catch (err) {
      throw usageError('CLI_FLAG_VALUE', { value: config, flag: 'config', reason: (err as Error).message });
    }
  }
  return out;
}

const methodPath = (name: string): string => `/v1/acl/auth-method/${encodeURIComponent(name)}`;

const RULE_FLAGS: FlagSpecs = {
  description: { kind: 'string', doc: 'A description.' },
  selector: {
    kind: 'string',
    doc: "The selector (go-bexpr over value.<claim> and list.<claim>) a login's claims must match.",
  },
  'bind-type': { kind: 'string', doc: 'service, node, role, policy or templated-policy.' },
  'bind-name': { kind: 'string', doc: 'The name to bind, with ${value.<claim>} interpolated.' },
  'bind-vars': { kind: 'list', doc: "A templated policy's variable, name=VALUE; repeatable." },
  ...FORMAT_FLAG,
};

function ruleFields(flags: Context['flags']): Partial<BindingRule> {
  const out: Partial<BindingRule> = {};
  for (const [flag, field] of [
    ['description', 'Description'],
    ['selector', 'Selector'],
    ['bind-type', 'BindType'],
    ['bind-name', 'BindName'],
  ] as const) {
    const value = str(flags, flag);
    if (value !== undefined) out[field] = value;
  }
  const vars = flags['bind-vars'];
  if (Array.isArray(vars)) {
    const bindVars: { Name?: string } = {};
    for (const pair of vars as string[]) {
      const eq = pair.indexOf('=');
      if (eq === -1) throw usageError('CLI_FLAG_VALUE', { value: pair, flag: 'bind-vars', reason: 'missing "="' });
      if (pair.slice(0, eq).toLowerCase() === 'name') bindVars.Name = pair.slice(eq + 1);
    }
    out.BindVars = bindVars;
  }
  return out;
}

const rulePath = (id: string): string => `/v1/acl/binding-rule/${encodeURIComponent(id)}`;

async function readMethod(api: ApiClient, name: string): Promise<AuthMethod> {
  return api.json<AuthMethod>('GET', methodPath(name), undefined, 'reading the auth method');
}

export const aclAuthMethodCommands: ClientCommand[] = [
  {
    name: 'acl auth-method create',
    synopsis: 'Creates an auth method',
    argsUsage: '',
    arity: [0, 0],
    flags: { type: { kind: 'string', doc: 'The auth method type: jwt (required).' }, ...METHOD_FLAGS },
    async run(ctx) {
      const { api, flags, io } = ctx;
      const show = printer(flags, (m: AuthMethod) => methodText(m));
      const type = required(flags, 'type');
      const name = required(flags, 'name');
      const body = { Name: name, Type: type, ...(await methodFields(ctx)) };
      io.out(
        show(
          await api.json<AuthMethod>('PUT', '/v1/acl/auth-method', JSON.stringify(body), 'creating the auth method'),
        ),
      );
      return 0;
    },
  },
  {
    name: 'acl auth-method read',
    synopsis: 'Shows an auth method (-name)',
    argsUsage: '',
    arity: [0, 0],
    flags: { name: { kind: 'string', doc: "The auth method's name." }, ...FORMAT_FLAG, ...SERVER_FLAGS },
    async run({ api, flags, io }) {
      const show = printer(flags, (m: AuthMethod) => methodText(m));
      io.out(show(await readMethod(api, required(flags, 'name'))));
      return 0;
    },
  },
  {
    name: 'acl auth-method update',
    synopsis: 'Updates an auth method (-name); fields not given are kept',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      ...METHOD_FLAGS,
      'no-merge': { kind: 'bool', doc: 'Replace the method instead of merging the flags into it.' },
    },
    async run(ctx) {
      const { api, flags, io } = ctx;
      const show = printer(flags, (m: AuthMethod) => methodText(m));
      const name = required(flags, 'name');
      const existing = await readMethod(api, name);
      const fields = await methodFields(ctx);
      const body =
        flags['no-merge'] === true
          ? { Name: name, Type: existing.Type, ...fields }
          : { ...existing, ...fields, Name: name };
      io.out(
        show(await api.json<AuthMethod>('PUT', methodPath(name), JSON.stringify(body), 'updating the auth method')),
      );
      return 0;
    },
  },
  {
    name: 'acl auth-method delete',
    synopsis: 'Deletes an auth method (-name), its binding rules and its login tokens',
    argsUsage: '',
    arity: [0, 0],
    flags: { name: { kind: 'string', doc: "The auth method's name." } },
    async run({ api, flags, io }) {
      const name = required(flags, 'name');
      await api.expectOk('DELETE', methodPath(name), undefined, 'deleting the auth method');
      io.out(`Auth-method "${name}" deleted successfully\n`);
      return 0;
    },
  },
  {
    name: 'acl auth-method list',
    synopsis: 'Lists auth methods',
    argsUsage: '',
    arity: [0, 0],
    flags: { ...FORMAT_FLAG, ...SERVER_FLAGS },
    async run({ api, flags, io }) {
      const show = printer(flags, (all: AuthMethod[]) =>
        all.map((m) => `${m.Name}:\n${methodText(m, '   ')}`).join(''),
      );
      io.out(show(await api.json<AuthMethod[]>('GET', '/v1/acl/auth-methods', undefined, 'listing auth methods')));
      return 0;
    },
  },
  {
    name: 'acl binding-rule create',
    synopsis: 'Creates a binding rule',
    argsUsage: '',
    arity: [0, 0],
    flags: { method: { kind: 'string', doc: "The auth method's name (required)." }, ...RULE_FLAGS },
    async run({ api, flags, io }) {
      const show = printer(flags, (r: BindingRule) => ruleText(r));
      const method = required(flags, 'method');
      required(flags, 'bind-type');
      required(flags, 'bind-name');
      const body = { AuthMethod: method, ...ruleFields(flags) };
      io.out(
        show(
          await api.json<BindingRule>('PUT', '/v1/acl/binding-rule', JSON.stringify(body), 'creating the binding rule'),
        ),
      );
      return 0;
    },
  },
  {
    name: 'acl binding-rule read',
    synopsis: 'Shows a binding rule (-id)',
    argsUsage: '',
    arity: [0, 0],
    flags: { id: { kind: 'string', doc: "The binding rule's ID." }, ...FORMAT_FLAG, ...SERVER_FLAGS },
    async run({ api, flags, io }) {
      const show = printer(flags, (r: BindingRule) => ruleText(r));
      const id = required(flags, 'id');
      io.out(show(await api.json<BindingRule>('GET', rulePath(id), undefined, 'reading the binding rule')));
      return 0;
    },
  },
  {
    name: 'acl binding-rule update',
    synopsis: 'Updates a binding rule (-id); fields not given are kept',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      id: { kind: 'string', doc: "The binding rule's ID." },
      ...RULE_FLAGS,
      'no-merge': { kind: 'bool', doc: 'Replace the rule instead of merging the flags into it.' },
    },
    async run({ api, flags, io }) {
      const show = printer(flags, (r: BindingRule) => ruleText(r));
      const id = required(flags, 'id');
      const existing = await api.json<BindingRule>('GET', rulePath(id), undefined, 'reading the binding rule');
      const fields = ruleFields(flags);
      const body =
        flags['no-merge'] === true
          ? { ID: id, AuthMethod: existing.AuthMethod, ...fields }
          : {
              ID: id,
              AuthMethod: existing.AuthMethod,
              Description: existing.Description,
              Selector: existing.Selector,
              BindType: existing.BindType,
              BindName: existing.BindName,
              ...(existing.BindVars === undefined ? {} : { BindVars: existing.BindVars }),
              ...fields,
            };
      io.out(show(await api.json<BindingRule>('PUT', rulePath(id), JSON.stringify(body), 'updating the binding rule')));
      return 0;
    },
  },
  {
    name: 'acl binding-rule delete',
    synopsis: 'Deletes a binding rule (-id)',
    argsUsage: '',
    arity: [0, 0],
    flags: { id: { kind: 'string', doc: "The binding rule's ID." } },
    async run({ api, flags, io }) {
      const id = required(flags, 'id');
      await api.expectOk('DELETE', rulePath(id), undefined, 'deleting the binding rule');
      io.out(`Binding rule "${id}" deleted successfully\n`);
      return 0;
    },
  },
  {
    name: 'acl binding-rule list',
    synopsis: 'Lists binding rules (-method to narrow)',
    argsUsage: '',
    arity: [0, 0],
    flags: { method: { kind: 'string', doc: 'Only the rules of this auth method.' }, ...FORMAT_FLAG, ...SERVER_FLAGS },
    async run({ api, flags, io }) {
      const show = printer(flags, (all: BindingRule[]) => all.map((r) => `${r.ID}:\n${ruleText(r, '   ')}`).join(''));
      const method = str(flags, 'method');
      const path =
        method === undefined
          ? '/v1/acl/binding-rules'
          : `/v1/acl/binding-rules?authmethod=${encodeURIComponent(method)}`;
      io.out(show(await api.json<BindingRule[]>('GET', path, undefined, 'listing binding rules')));
      return 0;
    },
  },
];
