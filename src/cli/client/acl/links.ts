// The link flags Consul's `acl role` and `acl token` commands share, read into request-body links:
// -policy-id/-policy-name, -role-id/-role-name, -service-identity NAME[:DC,DC], -node-identity
// NAME:DC, -templated-policy NAME with -var name:VALUE; and how a role or token prints them.
import { usageError } from '../../usage-error.js';
import type { Context } from '../command.js';

type Flags = Context['flags'];

export interface Link {
  ID?: string;
  Name?: string;
}

export interface ServiceIdentity {
  ServiceName: string;
  Datacenters?: string[];
}

export interface NodeIdentity {
  NodeName: string;
  Datacenter: string;
}

export interface TemplatedPolicy {
  TemplateName: string;
  TemplateVariables?: { Name?: string; name?: string };
  Datacenters?: string[];
}

/** What a role or token carries besides its own fields. */
export interface Links {
  Policies?: { ID: string; Name: string }[] | null | undefined;
  ServiceIdentities?: ServiceIdentity[] | null | undefined;
  NodeIdentities?: NodeIdentity[] | null | undefined;
  TemplatedPolicies?: TemplatedPolicy[] | null | undefined;
}

export const LINK_FLAGS = {
  'policy-id': { kind: 'list', doc: 'A policy by ID; repeatable.' },
  'policy-name': { kind: 'list', doc: 'A policy by name; repeatable.' },
  'service-identity': { kind: 'list', doc: 'A service identity, NAME[:DC1,DC2]; repeatable.' },
  'node-identity': { kind: 'list', doc: 'A node identity, NAME:DATACENTER; repeatable.' },
  'templated-policy': { kind: 'string', doc: 'A templated policy by name (builtin/service, ...).' },
  var: { kind: 'list', doc: "A templated policy's variable, name:VALUE; repeatable." },
} as const;

const list = (flags: Flags, name: string): readonly string[] => (flags[name] as readonly string[] | undefined) ?? [];

export function policyLinks(flags: Flags): Link[] {
  return [...list(flags, 'policy-id').map((ID) => ({ ID })), ...list(flags, 'policy-name').map((Name) => ({ Name }))];
}

export function roleLinks(flags: Flags): Link[] {
  return [...list(flags, 'role-id').map((ID) => ({ ID })), ...list(flags, 'role-name').map((Name) => ({ Name }))];
}

export function serviceIdentities(flags: Flags): ServiceIdentity[] {
  return list(flags, 'service-identity').map((value) => {
    const [name = '', dcs] = splitOnce(value);
    if (name === '') throw badValue('service-identity', value, 'no service name');
    return dcs === undefined ? { ServiceName: name } : { ServiceName: name, Datacenters: dcs.split(',') };
  });
}

export function nodeIdentities(flags: Flags): NodeIdentity[] {
  return list(flags, 'node-identity').map((value) => {
    const [name = '', dc] = splitOnce(value);
    if (name === '' || dc === undefined || dc === '') throw badValue('node-identity', value, 'want NAME:DATACENTER');
    return { NodeName: name, Datacenter: dc };
  });
}

/** -templated-policy with its -var name:VALUE. */
export function templatedPolicies(flags: Flags): TemplatedPolicy[] {
  const name = flags['templated-policy'];
  const vars = list(flags, 'var');
  if (typeof name !== 'string') {
    if (vars.length > 0) throw usageError('CLI_FLAG_MISSING', { detail: 'Cannot use -var without -templated-policy' });
    return [];
  }
  const variables: { Name?: string } = {};
  for (const v of vars) {
    const [key = '', value] = splitOnce(v);
    if (key.toLowerCase() !== 'name' || value === undefined) throw badValue('var', v, 'want name:VALUE');
    variables.Name = value;
  }
  return [{ TemplateName: name, ...(vars.length > 0 ? { TemplateVariables: variables } : {}) }];
}

/** Consul's pretty lines for the links, after the record of a role's or token's own fields. */
export function linksText(l: Links, indent = ''): string {
  let out = '';
  const policies = l.Policies ?? [];
  if (policies.length > 0)
    out += `${indent}Policies:\n${policies.map((p) => `${indent}   ${p.ID} - ${p.Name}\n`).join('')}`;
  const services = l.ServiceIdentities ?? [];
  if (services.length > 0) {
    out += `${indent}Service Identities:\n`;
    for (const s of services) {
      out += `${indent}   ${s.ServiceName} (Datacenters: ${s.Datacenters?.length ? s.Datacenters.join(', ') : 'all'})\n`;
    }
  }
  const nodes = l.NodeIdentities ?? [];
  if (nodes.length > 0) {
    out += `${indent}Node Identities:\n${nodes.map((n) => `${indent}   ${n.NodeName} (Datacenter: ${n.Datacenter})\n`).join('')}`;
  }
  const templated = l.TemplatedPolicies ?? [];
  if (templated.length > 0) {
    out += `${indent}Templated Policies:\n`;
    for (const t of templated) {
      out += `${indent}   ${t.TemplateName}\n`;
      const name = t.TemplateVariables?.name ?? t.TemplateVariables?.Name;
      if (name) out += `${indent}      Name: ${name}\n`;
      out += `${indent}      Datacenters: ${t.Datacenters?.length ? t.Datacenters.join(', ') : 'all'}\n`;
    }
  }
  return out;
}

function splitOnce(value: string): [string, string | undefined] {
  const at = value.indexOf(':');
  return at < 0 ? [value, undefined] : [value.slice(0, at), value.slice(at + 1)];
}

function badValue(flag: string, value: string, reason: string) {
  return usageError('CLI_FLAG_VALUE', { flag, value, reason });
}
