// Request bodies of the ACL API → the domain's inputs, decoded as Consul's Go handlers decode
// them: field names matched case-insensitively at every level, unknown fields rejected, a JSON
// null leaving the zero value, and Go's type-error texts behind the handler's prefix
// ("Token decoding failed: json: cannot unmarshal number into Go struct field …").
import type { LinkInput, NodeIdentityInput, ServiceIdentityInput, TokenInput } from '../../acl/tokens.js';
import type { PolicyInput } from '../../acl/policies.js';
import { parseDuration } from '../../core/duration.js';
import { invalid, type AgentError } from '../../core/errors.js';
import { jsonObjectDecoder } from '../body.js';

const TOKEN_PREFIX = 'Token decoding failed';
const POLICY_PREFIX = 'Policy decoding failed';
const BOOTSTRAP_PREFIX = 'Request decoding failed';

const decodeTokenObject = jsonObjectDecoder({
  prefix: TOKEN_PREFIX,
  typeName: 'structs.ACLToken',
  // What Consul's structs.ACLToken accepts (plus Namespace, decision D2); a client that read a
  // token may send it back whole, CreateTime, Hash and the indexes included (they are ignored).
  fields: [
    'AccessorID',
    'SecretID',
    'Description',
    'Policies',
    'Roles',
    'ServiceIdentities',
    'NodeIdentities',
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
  f.uint(raw.CreateIndex, 'CreateIndex');
  f.uint(raw.ModifyIndex, 'ModifyIndex');
  return {
    AccessorID: f.string(raw.AccessorID, 'AccessorID'),
    SecretID: f.string(raw.SecretID, 'SecretID'),
    Description: f.string(raw.Description, 'Description'),
    Policies: f.objects(raw.Policies, 'Policies', '[]structs.ACLTokenPolicyLink', 'structs.ACLTokenPolicyLink', ['ID', 'Name'], link),
    Roles: f.objects(raw.Roles, 'Roles', '[]structs.ACLTokenRoleLink', 'structs.ACLTokenRoleLink', ['ID', 'Name'], link),
    ServiceIdentities: f.objects(
      raw.ServiceIdentities,
      'ServiceIdentities',
      'structs.ACLServiceIdentities',
      'structs.ACLServiceIdentity',
      ['ServiceName', 'Datacenters'],
      (o, path, g): ServiceIdentityInput => ({
        ServiceName: g.string(o.ServiceName, `${path}.ServiceName`),
        Datacenters: g.strings(o.Datacenters, `${path}.Datacenters`),
      }),
    ),
    NodeIdentities: f.objects(
      raw.NodeIdentities,
      'NodeIdentities',
      'structs.ACLNodeIdentities',
      'structs.ACLNodeIdentity',
      ['NodeName', 'Datacenter'],
      (o, path, g): NodeIdentityInput => ({
        NodeName: g.string(o.NodeName, `${path}.NodeName`),
        Datacenter: g.string(o.Datacenter, `${path}.Datacenter`),
      }),
    ),
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
  f.uint(raw.CreateIndex, 'CreateIndex');
  f.uint(raw.ModifyIndex, 'ModifyIndex');
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

function link(o: Record<string, unknown>, path: string, g: GoFields): LinkInput {
  return { ID: g.string(o.ID, `${path}.ID`), Name: g.string(o.Name, `${path}.Name`) };
}

const RFC3339 = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})$/;

/** Typed reads of decoded JSON values, failing with Go's encoding/json texts. */
class GoFields {
  constructor(
    private readonly prefix: string,
    private readonly struct: string,
  ) {}

  fail(message: string): AgentError {
    return invalid('BODY_DECODE', `${this.prefix}: ${message}`);
  }

  private typeError(value: unknown, path: string, type: string): AgentError {
    return this.fail(`json: cannot unmarshal ${goValue(value)} into Go struct field ${this.struct}.${path} of type ${type}`);
  }

  string(value: unknown, path: string): string | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') throw this.typeError(value, path, 'string');
    return value;
  }

  bool(value: unknown, path: string): boolean | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'boolean') throw this.typeError(value, path, 'bool');
    return value;
  }

  uint(value: unknown, path: string): number | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'number') throw this.typeError(value, path, 'uint64');
    if (!Number.isInteger(value) || value < 0) {
      throw this.fail(`json: cannot unmarshal number ${value} into Go struct field ${this.struct}.${path} of type uint64`);
    }
    return value;
  }

  strings(value: unknown, path: string): string[] | undefined {
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) throw this.typeError(value, path, '[]string');
    return value.map((item) => {
      if (typeof item !== 'string') throw this.typeError(item, path, 'string');
      return item;
    });
  }

  /** An array of structs; each element's fields matched case-insensitively, unknown ones refused. */
  objects<T>(
    value: unknown,
    path: string,
    arrayType: string,
    elementType: string,
    fields: readonly string[],
    read: (o: Record<string, unknown>, path: string, g: GoFields) => T,
  ): T[] | undefined {
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) throw this.typeError(value, path, arrayType);
    const canonical = new Map(fields.map((name) => [name.toLowerCase(), name]));
    return value.map((item) => {
      if (item === null) return read({}, path, this);
      if (typeof item !== 'object' || Array.isArray(item)) throw this.typeError(item, path, elementType);
      const out: Record<string, unknown> = {};
      for (const [key, v] of Object.entries(item as Record<string, unknown>)) {
        const name = canonical.get(key.toLowerCase());
        if (name === undefined) throw this.fail(`json: unknown field ${JSON.stringify(key)}`);
        out[name] = v;
      }
      return read(out, path, this);
    });
  }

  /** A time.Time in RFC 3339, as epoch milliseconds (finer digits are dropped). */
  time(value: unknown): number | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') throw this.fail('Time.UnmarshalJSON: input is not a JSON string');
    const m = RFC3339.exec(value);
    const ms = m === null ? NaN : Date.parse(`${m[1]}${m[2] === undefined ? '' : `.${m[2].slice(0, 3).padEnd(3, '0')}`}${m[3]}`);
    if (Number.isNaN(ms)) {
      throw this.fail(`parsing time ${JSON.stringify(value)} as "2006-01-02T15:04:05Z07:00": cannot parse ${JSON.stringify(value)} as "2006"`);
    }
    return ms;
  }

  /** Consul's ExpirationTTL: a Go duration string, or a number of nanoseconds; other types are ignored. */
  duration(value: unknown): number | undefined {
    if (typeof value === 'number') return value / 1e6;
    if (typeof value !== 'string') return undefined;
    const ms = parseDuration(value);
    if (ms === undefined) throw this.fail(`time: invalid duration ${JSON.stringify(value)}`);
    return ms;
  }
}

/** How Go's decoder names a JSON value in "cannot unmarshal X into …". */
function goValue(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'bool';
  return 'object';
}
