// `services register|deregister`: Consul's `consul services` commands, same flags, same lines. A
// service comes from flags or from config files (HCL or JSON) read by the agent's own loader, so a
// file means here what it means in -config-dir; the agent decodes and validates what is sent.
import { ConfigError } from '../../config/errors.js';
import type { PlainObject } from '../../config/object.js';
import { isAgentError } from '../../core/errors.js';
import { readServiceDefinition } from '../../local/definition.js';
import type { ServiceDefinition } from '../../local/model.js';
import { usageError } from '../usage-error.js';
import { SERVER_FLAGS, type ClientCommand, type Context } from './command.js';

/** A service block of a file: as written (the body sent) and as the agent decodes it. */
interface FileService {
  readonly raw: PlainObject;
  readonly def: ServiceDefinition;
}

/** What the flags say of a service; empty values are unset, as Go's omitempty drops them. */
interface FlagService {
  readonly Kind: string;
  readonly ID: string;
  readonly Name: string;
  readonly Address: string;
  readonly Port: number;
  readonly Tags: readonly string[];
  readonly Meta: Readonly<Record<string, string>>;
  readonly TaggedAddresses: Readonly<Record<string, { Address: string; Port: number }>>;
}

/** Consul's FlagMapValue: `key=value`, split at the first `=`, later keys winning. */
function flagMap(flags: Context['flags'], name: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (flags[name] as readonly string[] | undefined) ?? []) {
    const at = pair.indexOf('=');
    if (at === -1)
      throw usageError('CLI_FLAG_VALUE', { value: pair, flag: name, reason: `Missing "=" value in argument: ${pair}` });
    out[pair.slice(0, at)] = pair.slice(at + 1);
  }
  return out;
}

/** Go's net.SplitHostPort and strconv.Atoi as Consul's api.ParseServiceAddr uses them; the error in Go's words. */
export function parseServiceAddr(hostPort: string): { Address: string; Port: number } | string {
  const bad = (why: string): string => `address ${hostPort}: ${why}`;
  const colon = hostPort.lastIndexOf(':');
  if (colon < 0) return bad('missing port in address');
  let host: string;
  let from = 0;
  let after = 0;
  if (hostPort.startsWith('[')) {
    const end = hostPort.indexOf(']');
    if (end < 0) return bad("missing ']' in address");
    if (end + 1 === hostPort.length) return bad('missing port in address');
    if (end + 1 !== colon)
      return bad(hostPort[end + 1] === ':' ? 'too many colons in address' : 'missing port in address');
    host = hostPort.slice(1, end);
    from = 1;
    after = end + 1;
  } else {
    host = hostPort.slice(0, colon);
    if (host.includes(':')) return bad('too many colons in address');
  }
  if (hostPort.indexOf('[', from) >= 0) return bad("unexpected '[' in address");
  if (hostPort.indexOf(']', after) >= 0) return bad("unexpected ']' in address");
  const port = hostPort.slice(colon + 1);
  if (!/^[+-]?\d+$/.test(port)) return `strconv.Atoi: parsing ${JSON.stringify(port)}: invalid syntax`;
  return { Address: host, Port: Number(port) };
}

function serviceFromFlags(flags: Context['flags']): FlagService {
  const str = (name: string): string => (typeof flags[name] === 'string' ? (flags[name] as string) : '');
  const meta = flagMap(flags, 'meta');
  const tagged: Record<string, { Address: string; Port: number }> = {};
  for (const [tag, value] of Object.entries(flagMap(flags, 'tagged-address'))) {
    const addr = parseServiceAddr(value);
    if (typeof addr === 'string')
      throw usageError('CLI_FLAG_VALUE', { value: `${tag}=${value}`, flag: 'tagged-address', reason: addr });
    tagged[tag] = addr;
  }
  return {
    Kind: str('kind'),
    ID: str('id'),
    Name: str('name'),
    Address: str('address'),
    Port: typeof flags.port === 'number' ? flags.port : 0,
    Tags: (flags.tag as readonly string[] | undefined) ?? [],
    Meta: meta,
    TaggedAddresses: tagged,
  };
}

/** The flags' service as Consul's api package sends it: empty fields left out. */
function flagBody(s: FlagService): PlainObject {
  const body: PlainObject = {};
  for (const [key, value] of Object.entries(s)) {
    const empty =
      value === '' ||
      value === 0 ||
      (Array.isArray(value) && value.length === 0) ||
      (typeof value === 'object' && Object.keys(value as object).length === 0);
    if (!empty) body[key] = value;
  }
  return body;
}

/**
 * The service blocks of `paths`, each file loaded as the agent loads a -config-file (Consul loads
 * them in dev mode too); a block the agent could not decode is named with its file.
 */
async function servicesFromFiles(paths: readonly string[], ctx: Context): Promise<FileService[]> {
  // Loaded here, not at the top: the config schema is most of what a client command would load.
  const [{ readConfigSources }, { loadConfig }] = await Promise.all([
    import('../../config/sources.js'),
    import('../../config/load.js'),
  ]);
  const services: FileService[] = [];
  for (const path of paths) {
    const sources = await readConfigSources([{ kind: 'file', path }]);
    const config = loadConfig({ sources, flags: {}, dev: true, warn: (message) => ctx.io.err(`${message}\n`) });
    for (const raw of config.registrations.services) {
      try {
        services.push({ raw, def: readServiceDefinition(raw) });
      } catch (err) {
        throw isAgentError(err) ? new ConfigError([`${path}: ${err.message}`]) : err;
      }
    }
  }
  return services;
}

/** Fields are named in any case, with or without underscores (src/local/fields.ts): one spelling is kept. */
const sameField = (a: string, b: string): boolean =>
  a.replace(/_/g, '').toLowerCase() === b.replace(/_/g, '').toLowerCase();

/** Consul's CombineArgs: a flag fills what the file leaves empty; meta and tagged addresses add, tags append. */
function combined({ raw, def }: FileService, flags: FlagService): PlainObject {
  const body: PlainObject = { ...raw };
  const set = (name: string, value: unknown): void => {
    for (const key of Object.keys(body)) if (sameField(key, name)) delete body[key];
    body[name] = value;
  };
  if (flags.ID !== '' && def.id === '') set('ID', flags.ID);
  if (flags.Address !== '' && def.address === '') set('Address', flags.Address);
  if (flags.Port !== 0 && def.port === 0) set('Port', flags.Port);
  if (flags.Kind !== '' && def.kind === '') set('Kind', flags.Kind);
  if (Object.keys(flags.Meta).length > 0) set('Meta', { ...def.meta, ...flags.Meta });
  if (Object.keys(flags.TaggedAddresses).length > 0) {
    const fromFile = Object.entries(def.taggedAddresses ?? {}).map(([tag, a]) => [
      tag,
      { Address: a.address, Port: a.port },
    ]);
    set('TaggedAddresses', { ...Object.fromEntries(fromFile), ...flags.TaggedAddresses });
  }
  if (flags.Tags.length > 0) set('Tags', [...def.tags, ...flags.Tags]);
  return body;
}

/** Runs `body`, printing a file's problem as Consul does (`Error: ...`, exit 1). */
async function withFiles(ctx: Context, body: (files: FileService[]) => Promise<number>): Promise<number> {
  let files: FileService[];
  try {
    files = await servicesFromFiles(ctx.args, ctx);
  } catch (err) {
    if (!isAgentError(err)) throw err;
    ctx.io.err(`Error: ${err.message}\n`);
    return 1;
  }
  return body(files);
}

export const servicesCommands: ClientCommand[] = [
  {
    name: 'services register',
    synopsis: 'Register services with the local agent',
    argsUsage: '[FILE...]',
    arity: [0, Number.MAX_SAFE_INTEGER],
    flags: {
      ...SERVER_FLAGS,
      id: {
        kind: 'string',
        doc: "ID of the service to register for arg-based registration. If this isn't set, it will default to the -name value.",
      },
      name: { kind: 'string', doc: 'Name of the service to register for arg-based registration.' },
      address: { kind: 'string', doc: 'Address of the service to register for arg-based registration.' },
      port: { kind: 'int', doc: 'Port of the service to register for arg-based registration.' },
      kind: { kind: 'string', doc: "The services 'kind'" },
      meta: {
        kind: 'list',
        doc: 'Metadata to set on the service, formatted as key=value. This flag may be specified multiple times to set multiple meta fields.',
      },
      tag: {
        kind: 'list',
        doc: 'Tag to add to the service. This flag can be specified multiple times to set multiple tags.',
      },
      'tagged-address': {
        kind: 'list',
        doc: 'Tagged address to set on the service, formatted as key=value. This flag may be specified multiple times to set multiple addresses.',
      },
    },
    async run(ctx) {
      const fromFlags = serviceFromFlags(ctx.flags);
      if (ctx.args.length === 0 && fromFlags.Name === '')
        throw usageError('CLI_FLAG_MISSING', {
          detail: 'Service registration requires at least one argument or flags.',
        });
      // Consul's words, though the flag it checks is -name.
      if (ctx.args.length > 0 && fromFlags.Name !== '')
        throw usageError('CLI_FLAG_CONFLICT', { detail: 'Service registration requires arguments or -id, not both.' });
      const register = async (name: string, body: PlainObject): Promise<void> => {
        const what = `registering service ${JSON.stringify(name)}`;
        await ctx.api.expectOk('PUT', '/v1/agent/service/register', JSON.stringify(body), what);
        ctx.io.out(`Registered service: ${name}\n`);
      };
      if (ctx.args.length === 0) {
        await register(fromFlags.Name, flagBody(fromFlags));
        return 0;
      }
      return withFiles(ctx, async (files) => {
        for (const file of files) await register(file.def.name, combined(file, fromFlags));
        return 0;
      });
    },
  },
  {
    name: 'services deregister',
    synopsis: 'Deregister services with the local agent',
    argsUsage: '[FILE...]',
    arity: [0, Number.MAX_SAFE_INTEGER],
    flags: {
      ...SERVER_FLAGS,
      id: { kind: 'string', doc: 'ID to delete. This must not be set if arguments are given.' },
    },
    async run(ctx) {
      const id = typeof ctx.flags.id === 'string' ? ctx.flags.id : '';
      if (ctx.args.length === 0 && id === '')
        throw usageError('CLI_FLAG_MISSING', {
          detail: 'Service deregistration requires at least one argument or -id.',
        });
      if (ctx.args.length > 0 && id !== '')
        throw usageError('CLI_FLAG_CONFLICT', {
          detail: 'Service deregistration requires arguments or -id, not both.',
        });
      const deregister = async (serviceId: string, name: string): Promise<void> => {
        // Consul quotes the file's Name here (empty with -id); the ID names what failed in every case.
        const what = `deregistering service ${JSON.stringify(name || serviceId)}`;
        await ctx.api.expectOk('PUT', `/v1/agent/service/deregister/${encodeURIComponent(serviceId)}`, undefined, what);
        ctx.io.out(`Deregistered service: ${serviceId}\n`);
      };
      if (ctx.args.length === 0) {
        await deregister(id, '');
        return 0;
      }
      return withFiles(ctx, async (files) => {
        // A block without ID or name names nothing to remove: Consul skips it.
        for (const { def } of files) if ((def.id || def.name) !== '') await deregister(def.id || def.name, def.name);
        return 0;
      });
    },
  },
];
