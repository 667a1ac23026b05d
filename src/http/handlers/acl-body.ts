// Request bodies of the ACL API → the domain's inputs, decoded as Consul's Go handlers decode
// them: field names matched case-insensitively at every level, unknown fields rejected, a JSON
// null leaving the zero value, and Go's type-error texts behind the handler's prefix
// ("Token decoding failed: json: cannot unmarshal number into Go struct field …").
import type { LinkInput, NodeIdentityInput, ServiceIdentityInput } from '../../acl/link-inputs.js';
import type { TokenInput } from '../../acl/tokens.js';
import type { PolicyInput } from '../../acl/policies.js';
import type { RoleInput } from '../../acl/roles.js';
import type { TemplatedPolicyInput } from '../../acl/templated.js';
import { jsonObjectDecoder } from '../body.js';
import { GoFields } from '../go-fields.js';

const TOKEN_PREFIX = 'Token decoding failed';
const POLICY_PREFIX = 'Policy decoding failed';
const BOOTSTRAP_PREFIX = 'Request decoding failed';
const ROLE_PREFIX = 'Role decoding failed';
const PREVIEW_PREFIX = 'Failed to decode request body';

const decodeTokenObject = jsonObjectDecoder({
  prefix: TOKEN_PREFIX,
  typeName: 'structs.ACLToken',
  // What Consul's structs.ACLToken accepts (plus Namespace, docs/decisions.md D2); a client may
  // send back a token it read, CreateTime, Hash and the indexes included (they are ignored).
  fields: [
    'AccessorID',
    'SecretID',
    'Description',
    'Policies',
    'Roles',
    'ServiceIdentities',
    'NodeIdentities',
    'TemplatedPolicies',
    'Local',
    'AuthMethod',
    'ExpirationTime',
    'ExpirationTTL',
    'CreateTime',
    'Hash',
    'Namespace',
    'CreateIndex',
    'ModifyIndex',
  ],
});

const decodePolicyObject = jsonObjectDecoder({
  prefix: POLICY_PREFIX,
  typeName: 'structs.ACLPolicy',
  fields: ['ID', 'Name', 'Description', 'Rules', 'Datacenters', 'Hash', 'CreateIndex', 'ModifyIndex'],
});

const decodeRoleObject = jsonObjectDecoder({
  prefix: ROLE_PREFIX,
  typeName: 'structs.ACLRole',
  fields: [
    'ID',
    'Name',
    'Description',
    'Policies',
    'ServiceIdentities',
    'NodeIdentities',
    'TemplatedPolicies',
    'Hash',
    'CreateIndex',
    'ModifyIndex',
  ],
});

const decodePreviewObject = jsonObjectDecoder({
  prefix: PREVIEW_PREFIX,
  typeName: 'structs.ACLTemplatedPolicyVariables',
  fields: ['Name'],
});

const decodeBootstrapObject = jsonObjectDecoder({
  prefix: BOOTSTRAP_PREFIX,
  typeName: 'api.BootstrapRequest',
  fields: ['BootstrapSecret'],
});

/** PUT /v1/acl/token, /v1/acl/token/:accessor and …/clone. */
export function decodeTokenBody(body: Buffer | undefined): TokenInput {
  const raw = decodeTokenObject(body);
  const f = new GoFields(TOKEN_PREFIX, 'ACLToken');
  f.time(raw.CreateTime);
  f.string(raw.Hash, 'Hash');
  f.int(raw.CreateIndex, 'CreateIndex', 'uint64');
  f.int(raw.ModifyIndex, 'ModifyIndex', 'uint64');
  return {
    AccessorID: f.string(raw.AccessorID, 'AccessorID'),
    SecretID: f.string(raw.SecretID, 'SecretID'),
    Description: f.string(raw.Description, 'Description'),
    Policies: policyLinks(f, raw.Policies, 'ACLTokenPolicyLink'),
    Roles: f.objects(
      raw.Roles,
      'Roles',
      '[]structs.ACLTokenRoleLink',
      'structs.ACLTokenRoleLink',
      ['ID', 'Name'],
      link,
    ),
    ServiceIdentities: serviceIdentities(f, raw.ServiceIdentities),
    NodeIdentities: nodeIdentities(f, raw.NodeIdentities),
    TemplatedPolicies: templatedPolicies(f, raw.TemplatedPolicies),
    Local: f.bool(raw.Local, 'Local'),
    AuthMethod: f.string(raw.AuthMethod, 'AuthMethod'),
    ExpirationTime: f.time(raw.ExpirationTime),
    ExpirationTTL: f.duration(raw.ExpirationTTL),
    Namespace: f.string(raw.Namespace, 'Namespace'),
  };
}

/** PUT /v1/acl/policy and /v1/acl/policy/:id. */
export function decodePolicyBody(body: Buffer | undefined): PolicyInput {
  const raw = decodePolicyObject(body);
  const f = new GoFields(POLICY_PREFIX, 'ACLPolicy');
  f.string(raw.Hash, 'Hash');
  f.int(raw.CreateIndex, 'CreateIndex', 'uint64');
  f.int(raw.ModifyIndex, 'ModifyIndex', 'uint64');
  return {
    ID: f.string(raw.ID, 'ID'),
    Name: f.string(raw.Name, 'Name'),
    Description: f.string(raw.Description, 'Description'),
    Rules: f.string(raw.Rules, 'Rules'),
    Datacenters: f.strings(raw.Datacenters, 'Datacenters'),
  };
}

/** PUT /v1/acl/bootstrap: the body is optional; `BootstrapSecret` sets the new token's SecretID. */
export function decodeBootstrapBody(body: Buffer | undefined): string | undefined {
  if (body === undefined || body.length === 0) return undefined;
  const raw = decodeBootstrapObject(body);
  return new GoFields(BOOTSTRAP_PREFIX, 'BootstrapRequest').string(raw.BootstrapSecret, 'BootstrapSecret') || undefined;
}

/** PUT /v1/acl/role and /v1/acl/role/:id. */
export function decodeRoleBody(body: Buffer | undefined): RoleInput {
  const raw = decodeRoleObject(body);
  const f = new GoFields(ROLE_PREFIX, 'ACLRole');
  f.string(raw.Hash, 'Hash');
  f.int(raw.CreateIndex, 'CreateIndex', 'uint64');
  f.int(raw.ModifyIndex, 'ModifyIndex', 'uint64');
  return {
    ID: f.string(raw.ID, 'ID'),
    Name: f.string(raw.Name, 'Name'),
    Description: f.string(raw.Description, 'Description'),
    Policies: policyLinks(f, raw.Policies, 'ACLRolePolicyLink'),
    ServiceIdentities: serviceIdentities(f, raw.ServiceIdentities),
    NodeIdentities: nodeIdentities(f, raw.NodeIdentities),
    TemplatedPolicies: templatedPolicies(f, raw.TemplatedPolicies),
  };
}

/**
 * POST /v1/acl/templated-policy/preview/:name: the template's variables. An empty body is no
 * variables (Consul's CLI sends one for a template that takes none).
 */
export function decodePreviewBody(body: Buffer | undefined): { readonly Name?: string | undefined } {
  if (body === undefined || body.toString('utf8').trim() === '') return {};
  const raw = decodePreviewObject(body);
  return { Name: new GoFields(PREVIEW_PREFIX, 'ACLTemplatedPolicyVariables').string(raw.Name, 'name') };
}

function policyLinks(f: GoFields, value: unknown, type: string): LinkInput[] | undefined {
  return f.objects(value, 'Policies', `[]structs.${type}`, `structs.${type}`, ['ID', 'Name'], link);
}

function serviceIdentities(f: GoFields, value: unknown): ServiceIdentityInput[] | undefined {
  return f.objects(
    value,
    'ServiceIdentities',
    'structs.ACLServiceIdentities',
    'structs.ACLServiceIdentity',
    ['ServiceName', 'Datacenters'],
    (o, path, g): ServiceIdentityInput => ({
      ServiceName: g.string(o.ServiceName, `${path}.ServiceName`),
      Datacenters: g.strings(o.Datacenters, `${path}.Datacenters`),
    }),
  );
}

function nodeIdentities(f: GoFields, value: unknown): NodeIdentityInput[] | undefined {
  return f.objects(
    value,
    'NodeIdentities',
    'structs.ACLNodeIdentities',
    'structs.ACLNodeIdentity',
    ['NodeName', 'Datacenter'],
    (o, path, g): NodeIdentityInput => ({
      NodeName: g.string(o.NodeName, `${path}.NodeName`),
      Datacenter: g.string(o.Datacenter, `${path}.Datacenter`),
    }),
  );
}

/** TemplateID is accepted (a client may send back what it read) and replaced by the template's own. */
function templatedPolicies(f: GoFields, value: unknown): TemplatedPolicyInput[] | undefined {
  return f.objects(
    value,
    'TemplatedPolicies',
    'structs.ACLTemplatedPolicies',
    'structs.ACLTemplatedPolicy',
    ['TemplateID', 'TemplateName', 'TemplateVariables', 'Datacenters'],
    (o, path, g): TemplatedPolicyInput => {
      g.string(o.TemplateID, `${path}.TemplateID`);
      const variables = g.fields(
        o.TemplateVariables,
        `${path}.TemplateVariables`,
        'structs.ACLTemplatedPolicyVariables',
        ['Name'],
      );
      return {
        TemplateName: g.string(o.TemplateName, `${path}.TemplateName`),
        TemplateVariables:
          variables === undefined ? undefined : { Name: g.string(variables.Name, `${path}.TemplateVariables.name`) },
        Datacenters: g.strings(o.Datacenters, `${path}.Datacenters`),
      };
    },
  );
}

function link(o: Record<string, unknown>, path: string, g: GoFields): LinkInput {
  return { ID: g.string(o.ID, `${path}.ID`), Name: g.string(o.Name, `${path}.Name`) };
}
