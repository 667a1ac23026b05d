// Consul 1.17's built-in templated policies (docs/decisions.md#templated-policies): each with its
// ID, JSON-schema text, Go-template text and description as Consul's list shows them, and the rules
// it grants as ParsedRules, built from the variables without parsing the rendered text (the same
// rules: test/unit/acl/templated.test.ts parses each rendering and compares). Validation follows
// Consul's ACLTemplatedPolicy.ValidateTemplatedPolicy and its token and role writers, texts included.
import { createHash } from 'node:crypto';
import { agentError } from '../core/errors.js';
import { validIdentityName } from './link-inputs.js';
import type { StoredTemplatedPolicy } from './model.js';
import type { ParsedRules } from './rules/model.js';
import { nodeIdentityRules, serviceIdentityRules } from './rules/identities.js';

/** A templated policy link as a client sends it; as in Go, an empty string means "not given". */
export interface TemplatedPolicyInput {
  readonly TemplateName?: string | undefined;
  /** Undefined when the key was absent or null (Go's nil pointer). */
  readonly TemplateVariables?: { readonly Name?: string | undefined } | undefined;
  readonly Datacenters?: readonly string[] | undefined;
}

export interface TemplateBase {
  readonly TemplateName: string;
  readonly TemplateID: string;
  /** '' for a template that takes no variables (nothing is validated). */
  readonly Schema: string;
  readonly Template: string;
  readonly Description: string;
  /** The rules granted; `name` is the (escaped) `name` variable, '' for templates without one. */
  readonly rules: (name: string) => ParsedRules;
}

// Consul's schema texts, byte for byte: identity names are required and non-empty.
const NAME_SCHEMA =
  '{\n\t"type": "object",\n\t"properties": {\n\t\t"name": { "type": "string", "$ref": "#/definitions/min-length-one" }\n\t},\n\t"required": ["name"],\n\t"definitions": {\n\t\t"min-length-one": {\n\t\t\t\t"type": "string",\n\t\t\t\t"minLength": 1\n\t\t}\n\t}\n}';
const WORKLOAD_SCHEMA =
  '{\n  "type": "object",\n  "properties": {\n    "name": { "type": "string", "$ref": "#/definitions/min-length-one" }\n  },\n  "required": ["name"],\n  "definitions": {\n    "min-length-one": {\n      "type": "string",\n      "minLength": 1\n    }\n  }\n}';

const prefixRead = [{ name: '', policy: 'read' }] as const;
const prefixWrite = [{ name: '', policy: 'write' }] as const;

/** Sorted by name: the order Go writes the map of GET /v1/acl/templated-policies. */
const TEMPLATES: readonly TemplateBase[] = [
  {
    TemplateName: 'builtin/api-gateway',
    TemplateID: '00000000-0000-0000-0000-000000000008',
    Schema: NAME_SCHEMA,
    Template:
      'mesh = "read"\nnode_prefix "" {\n\tpolicy = "read"\n}\nservice_prefix "" {\n\tpolicy = "read"\n}\nservice "{{.Name}}" {\n\tpolicy = "write"\n}',
    Description: 'Gives the token or role permissions for a Consul api gateway',
    rules: (name) => ({
      mesh: 'read',
      node_prefix: prefixRead,
      service: [{ name, policy: 'write' }],
      service_prefix: prefixRead,
    }),
  },
  {
    TemplateName: 'builtin/dns',
    TemplateID: '00000000-0000-0000-0000-000000000005',
    Schema: '',
    Template:
      '\nnode_prefix "" {\n\tpolicy = "read"\n}\nservice_prefix "" {\n\tpolicy = "read"\n}\nquery_prefix "" {\n\tpolicy = "read"\n}',
    Description: 'Gives the token or role permissions for the Consul DNS to query services in the network.',
    rules: () => ({ node_prefix: prefixRead, service_prefix: prefixRead, query_prefix: prefixRead }),
  },
  {
    TemplateName: 'builtin/node',
    TemplateID: '00000000-0000-0000-0000-000000000004',
    Schema: NAME_SCHEMA,
    Template: '\nnode "{{.Name}}" {\n\tpolicy = "write"\n}\nservice_prefix "" {\n\tpolicy = "read"\n}',
    Description:
      'Gives the token or role permissions for a register an agent/node into the catalog. A node is typically a consul agent but can also be a physical server, cloud instance or a container.',
    rules: nodeIdentityRules,
  },
  {
    TemplateName: 'builtin/nomad-client',
    TemplateID: '00000000-0000-0000-0000-000000000009',
    Schema: '',
    Template:
      'agent_prefix "" {\n  policy = "read"\n}\nnode_prefix "" {\n  policy = "read"\n}\nservice_prefix "" {\n  policy = "write"\n}\nkey_prefix "" {\n  policy = "read"\n}',
    Description: 'Gives the token or role permissions required for integration with a nomad client.',
    rules: () => ({
      agent_prefix: prefixRead,
      key_prefix: prefixRead,
      node_prefix: prefixRead,
      service_prefix: prefixWrite,
    }),
  },
  {
    TemplateName: 'builtin/nomad-server',
    TemplateID: '00000000-0000-0000-0000-000000000006',
    Schema: '',
    Template:
      '\nacl = "write"\nagent_prefix "" {\n  policy = "read"\n}\nnode_prefix "" {\n  policy = "read"\n}\nservice_prefix "" {\n  policy = "write"\n}',
    Description: 'Gives the token or role permissions required for integration with a nomad server.',
    rules: () => ({ acl: 'write', agent_prefix: prefixRead, node_prefix: prefixRead, service_prefix: prefixWrite }),
  },
  {
    TemplateName: 'builtin/service',
    TemplateID: '00000000-0000-0000-0000-000000000003',
    Schema: NAME_SCHEMA,
    Template:
      '\nservice "{{.Name}}" {\n\tpolicy = "write"\n}\nservice "{{.Name}}-sidecar-proxy" {\n\tpolicy = "write"\n}\nservice_prefix "" {\n\tpolicy = "read"\n}\nnode_prefix "" {\n\tpolicy = "read"\n}',
    Description:
      "Gives the token or role permissions to register a service and discover services in the Consul catalog. It also gives the specified service's sidecar proxy the permission to discover and route traffic to other services.",
    rules: serviceIdentityRules,
  },
  {
    TemplateName: 'builtin/workload-identity',
    TemplateID: '00000000-0000-0000-0000-000000000007',
    Schema: WORKLOAD_SCHEMA,
    Template: 'identity "{{.Name}}" {\n\tpolicy = "write"\n}',
    Description: 'Gives the token or role permissions for a specific workload identity.',
    rules: (name) => ({ identity: [{ name, policy: 'write' }] }),
  },
];

const BY_NAME: ReadonlyMap<string, TemplateBase> = new Map(TEMPLATES.map((t) => [t.TemplateName, t]));

export function listTemplates(): readonly TemplateBase[] {
  return TEMPLATES;
}

export function findTemplate(name: string): TemplateBase | undefined {
  return BY_NAME.get(name);
}

/** GET /v1/acl/templated-policy/name/:name and each entry of the list. */
export function templateJson(t: TemplateBase): Record<string, unknown> {
  return { TemplateName: t.TemplateName, Schema: t.Schema, Template: t.Template, Description: t.Description };
}

/**
 * Consul's ValidateTemplatedPolicy: nothing for a template without a schema; else the JSON-schema
 * errors (go-multierror's text), then the service or node name rule. Undefined when valid.
 */
export function templateVariablesError(
  base: TemplateBase,
  variables: { readonly Name?: string | undefined } | undefined,
): string | undefined {
  if (base.Schema === '') return undefined;
  // Go encodes the variables with `name,omitempty`: an empty name is a missing one.
  if (variables === undefined) return multiError('Invalid type. Expected: object, given: null');
  const name = variables.Name ?? '';
  if (name === '') return multiError('name is required');
  const validName = validIdentityName(name);
  if (base.TemplateName === 'builtin/service' && !validName) {
    return `service identity ${goQuote(name)} has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed`;
  }
  if (base.TemplateName === 'builtin/node' && !validName) {
    return `node identity ${goQuote(name)}  has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed`;
  }
  return undefined;
}

/** What a token or role write keeps: Consul's checks in its order, then its Deduplicate. */
export function normalizeTemplatedPolicies(
  inputs: readonly TemplatedPolicyInput[],
  owner: 'token' | 'role',
  local: boolean,
): StoredTemplatedPolicy[] {
  const out: StoredTemplatedPolicy[] = [];
  const seen = new Set<string>();
  for (const input of inputs) {
    const name = input.TemplateName ?? '';
    if (name === '') throw agentError('ACL_TEMPLATED_NO_NAME', { owner });
    const datacenters = input.Datacenters ?? [];
    if (local && datacenters.length > 0) throw agentError('ACL_TEMPLATED_LOCAL_DCS', { name });
    const base = findTemplate(name);
    if (base === undefined) throw agentError('ACL_TEMPLATED_UNKNOWN', { name, owner });
    const problem = templateVariablesError(base, input.TemplateVariables);
    if (problem !== undefined) throw agentError('ACL_TEMPLATED_INVALID', { owner, detail: problem });
    // Deduplicate: once per template without variables, once per (template, name) otherwise.
    const variable = base.Schema === '' ? '' : (input.TemplateVariables?.Name ?? '');
    const key = `${name}\u0000${variable}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({
      TemplateID: base.TemplateID,
      TemplateName: name,
      ...(input.TemplateVariables === undefined
        ? {}
        : { TemplateVariables: { Name: input.TemplateVariables.Name ?? '' } }),
      ...(datacenters.length > 0 ? { Datacenters: [...datacenters] } : {}),
    });
  }
  return out;
}

/** The rules a stored templated policy grants in `datacenter`; undefined when it is scoped elsewhere. */
export function templatedRules(tp: StoredTemplatedPolicy, datacenter: string): ParsedRules | undefined {
  const dcs = tp.Datacenters;
  if (dcs !== undefined && dcs.length > 0 && !dcs.includes(datacenter)) return undefined;
  const base = findTemplate(tp.TemplateName);
  return base?.rules(templateValue(tp.TemplateVariables?.Name ?? ''));
}

/** The template text with `{{.Name}}` filled in, as Go's html/template executes it. */
export function renderTemplate(base: TemplateBase, name: string): string {
  return base.Template.replaceAll('{{.Name}}', templateValue(name));
}

/** The synthetic policy POST /v1/acl/templated-policy/preview answers (Consul's SyntheticPolicy). */
export interface SyntheticPolicy {
  readonly ID: string;
  readonly Name: string;
  readonly Description: string;
  readonly Rules: string;
}

// Go's fnv.New128a().Sum(rules) appends the hash of nothing to the rules' bytes: Consul's synthetic
// IDs are the rules in hex followed by FNV-128a's offset basis.
const FNV128A_EMPTY = '6c62272e07bb014262b821756295c58d';

export function syntheticPolicy(base: TemplateBase, name: string): SyntheticPolicy {
  const rules = renderTemplate(base, name);
  const id = `${Buffer.from(rules).toString('hex')}${FNV128A_EMPTY}`;
  return {
    ID: id,
    Name: `synthetic-policy-${id}`,
    Description: `synthetic policy generated from templated policy: ${base.TemplateName}`,
    Rules: rules,
  };
}

/** Adds a stored templated policy to a token's or role's hash. */
export function hashTemplated(h: ReturnType<typeof createHash>, list: readonly StoredTemplatedPolicy[]): void {
  for (const tp of list) {
    h.update(`templated:${tp.TemplateName}:${tp.TemplateVariables?.Name ?? ''}:${(tp.Datacenters ?? []).join(',')}`);
  }
}

/** html/template's escaping of a value in text: what Consul's rendering makes of an odd name. */
function templateValue(value: string): string {
  return value.replace(/["'&+<>]/g, (c) => HTML_ESCAPES[c] ?? c).replaceAll('\u0000', '\uFFFD');
}

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '"': '&#34;',
  "'": '&#39;',
  '&': '&amp;',
  '+': '&#43;',
  '<': '&lt;',
  '>': '&gt;',
};

/** go-multierror's text for one error. */
function multiError(detail: string): string {
  return `1 error occurred:\n\t* ${detail}\n\n`;
}

function goQuote(s: string): string {
  return JSON.stringify(s);
}
