// `catalog datacenters|nodes|services`: Consul's `consul catalog` list commands, same flags, same
// columns, same "No ... match the given query" line on standard error with exit code 0.
import { usageError } from '../usage-error.js';
import { SERVER_FLAGS, byBytes, table, valueOf, type ClientCommand, type Context } from './command.js';
import type { FlagSpecs } from './flags.js';

interface CatalogNode {
  ID: string;
  Node: string;
  Address: string;
  Datacenter: string;
  TaggedAddresses: Record<string, string> | null;
  Meta: Record<string, string> | null;
}

interface ServiceNode {
  ID: string;
  Node: string;
  Address: string;
  Datacenter: string;
  TaggedAddresses: Record<string, string> | null;
  NodeMeta: Record<string, string> | null;
}

interface NodeServices {
  Services: Record<string, { Service: string; Tags: string[] | null }> | null;
}

const NODE_META: FlagSpecs = {
  'node-meta': {
    kind: 'list',
    doc: 'Metadata to filter nodes with the given `key=value` pairs. May be given more than once.',
  },
};

/** The query string of Consul's QueryOptions: `node-meta=k:v` per pair, then the named values. */
function queryOf(flags: Context['flags'], extra: Readonly<Record<string, string | undefined>>): string {
  const parts: string[] = [];
  for (const pair of (flags['node-meta'] as readonly string[] | undefined) ?? []) {
    const at = pair.indexOf('=');
    // Consul's FlagMapValue: a pair without `=` is a flag error.
    if (at === -1)
      throw usageError('CLI_FLAG_VALUE', {
        value: pair,
        flag: 'node-meta',
        reason: `missing "=" value in argument: ${pair}`,
      });
    parts.push(`node-meta=${encodeURIComponent(`${pair.slice(0, at)}:${pair.slice(at + 1)}`)}`);
  }
  for (const [name, value] of Object.entries(extra)) {
    if (value !== undefined && value !== '') parts.push(`${name}=${encodeURIComponent(value)}`);
  }
  return parts.length === 0 ? '' : `?${parts.join('&')}`;
}

/** `k=v, k=v` sorted by key: Consul's mapToKV. */
function keyValues(map: Readonly<Record<string, string>> | null): string {
  if (map === null) return '';
  return Object.keys(map)
    .sort(byBytes)
    .map((k) => `${k}=${map[k]}`)
    .join(', ');
}

/** Consul's node table: the ID cut to its first group unless -detailed, which adds two columns. */
export function nodeTable(nodes: readonly CatalogNode[], detailed: boolean): string {
  const header = detailed
    ? ['Node', 'ID', 'Address', 'DC', 'TaggedAddresses', 'Meta']
    : ['Node', 'ID', 'Address', 'DC'];
  const rows = nodes.map((n) => {
    if (detailed) return [n.Node, n.ID, n.Address, n.Datacenter, keyValues(n.TaggedAddresses), keyValues(n.Meta)];
    const dash = n.ID.indexOf('-');
    return [n.Node, dash > 0 ? n.ID.slice(0, dash) : n.ID, n.Address, n.Datacenter];
  });
  // columnize trims the whole text, not each line.
  return table([header, ...rows]).trim();
}

/** Consul's `-tags` layout (a tabwriter with padding 6): names in a column, tags joined by commas. */
export function servicesWithTags(services: ReadonlyMap<string, readonly string[]>): string {
  const names = [...services.keys()].sort(byBytes);
  const width = Math.max(...names.map((n) => n.length)) + 6;
  return names
    .map((name) => `${name.padEnd(width)}${[...(services.get(name) ?? [])].sort(byBytes).join(',')}`)
    .join('\n')
    .trim();
}

export const catalogCommands: ClientCommand[] = [
  {
    name: 'catalog datacenters',
    synopsis: 'Lists all known datacenters',
    argsUsage: '',
    arity: [0, 0],
    flags: { ...SERVER_FLAGS },
    async run({ api, io }) {
      const dcs = await api.json<string[]>('GET', '/v1/catalog/datacenters', undefined, 'listing datacenters');
      for (const dc of dcs) io.out(`${dc}\n`);
      return 0;
    },
  },
  {
    name: 'catalog nodes',
    synopsis: 'Lists all nodes in the given datacenter',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      ...SERVER_FLAGS,
      detailed: {
        kind: 'bool',
        doc: 'Output detailed information about the nodes including their addresses and metadata.',
      },
      filter: { kind: 'string', doc: 'Filter to use with the request (a bexpr expression; @file or - for stdin).' },
      near: { kind: 'string', doc: 'Node name to sort the node list by estimated round-trip time from it.' },
      ...NODE_META,
      service: {
        kind: 'string',
        doc: 'Service `id or name` to filter nodes. Only nodes providing the given service are returned.',
      },
    },
    async run({ api, flags, io }) {
      const filter = typeof flags.filter === 'string' ? await valueOf(io, flags.filter) : undefined;
      const query = queryOf(flags, { near: flags.near as string | undefined, filter });
      let nodes: CatalogNode[];
      if (typeof flags.service === 'string' && flags.service !== '') {
        const path = `/v1/catalog/service/${encodeURIComponent(flags.service)}${query}`;
        const instances = await api.json<ServiceNode[]>('GET', path, undefined, 'listing nodes for service');
        nodes = instances.map((s) => ({
          ID: s.ID,
          Node: s.Node,
          Address: s.Address,
          Datacenter: s.Datacenter,
          TaggedAddresses: s.TaggedAddresses,
          Meta: s.NodeMeta,
        }));
      } else {
        nodes = await api.json<CatalogNode[]>('GET', `/v1/catalog/nodes${query}`, undefined, 'listing nodes');
      }
      if (nodes.length === 0) {
        io.err('No nodes match the given query - try expanding your search.\n');
        return 0;
      }
      io.out(`${nodeTable(nodes, flags.detailed === true)}\n`);
      return 0;
    },
  },
  {
    name: 'catalog services',
    synopsis: 'Lists all registered services in a datacenter',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      ...SERVER_FLAGS,
      node: { kind: 'string', doc: 'Node `id or name` for which to list services.' },
      ...NODE_META,
      tags: { kind: 'bool', doc: "Display each service's tags as a comma-separated list beside each service entry." },
    },
    async run({ api, flags, io }) {
      const query = queryOf(flags, {});
      const services = new Map<string, string[]>();
      if (typeof flags.node === 'string' && flags.node !== '') {
        const path = `/v1/catalog/node/${encodeURIComponent(flags.node)}${query}`;
        const node = await api.json<NodeServices | null>('GET', path, undefined, 'listing services for node');
        for (const s of Object.values(node?.Services ?? {})) {
          const tags = services.get(s.Service) ?? [];
          services.set(s.Service, [...tags, ...(s.Tags ?? [])]);
        }
      } else {
        const all = await api.json<Record<string, string[] | null>>(
          'GET',
          `/v1/catalog/services${query}`,
          undefined,
          'listing services',
        );
        for (const [name, tags] of Object.entries(all)) services.set(name, tags ?? []);
      }
      if (services.size === 0) {
        io.err('No services match the given query - try expanding your search.\n');
        return 0;
      }
      if (flags.tags === true) io.out(`${servicesWithTags(services)}\n`);
      else for (const name of [...services.keys()].sort(byBytes)) io.out(`${name}\n`);
      return 0;
    },
  },
];
