// Request bodies of the auth method, binding rule and login endpoints → the domain's inputs,
// decoded as Consul's handlers decode them (acl-body.ts's rules: field names matched
// case-insensitively, unknown fields refused, Go's type errors behind the handler's prefix).
import type { AuthMethodInput } from '../../acl/auth-methods/auth-methods.js';
import type { BindingRuleInput } from '../../acl/auth-methods/binding-rules.js';
import type { LoginInput } from '../../acl/auth-methods/login.js';
import { jsonObjectDecoder } from '../body.js';
import { GoFields } from '../go-fields.js';

const METHOD_PREFIX = 'AuthMethod decoding failed';
const RULE_PREFIX = 'BindingRule decoding failed';
const LOGIN_PREFIX = 'Failed to decode request body';

const decodeMethodObject = jsonObjectDecoder({
  prefix: METHOD_PREFIX,
  typeName: 'structs.ACLAuthMethod',
  fields: [
    'Name',
    'Type',
    'DisplayName',
    'Description',
    'MaxTokenTTL',
    'TokenLocality',
    'Config',
    'Namespace',
    'CreateIndex',
    'ModifyIndex',
  ],
});

const decodeRuleObject = jsonObjectDecoder({
  prefix: RULE_PREFIX,
  typeName: 'structs.ACLBindingRule',
  fields: [
    'ID',
    'Description',
    'AuthMethod',
    'Selector',
    'BindType',
    'BindName',
    'BindVars',
    'Namespace',
    'CreateIndex',
    'ModifyIndex',
  ],
});

const decodeLoginObject = jsonObjectDecoder({
  prefix: LOGIN_PREFIX,
  typeName: 'structs.ACLLoginParams',
  fields: ['AuthMethod', 'BearerToken', 'Meta', 'Namespace'],
});

/** PUT /v1/acl/auth-method and /v1/acl/auth-method/:name. */
export function decodeAuthMethodBody(body: Buffer | undefined): AuthMethodInput {
  const raw = decodeMethodObject(body);
  const f = new GoFields(METHOD_PREFIX, 'ACLAuthMethod');
  f.int(raw.CreateIndex, 'CreateIndex', 'uint64');
  f.int(raw.ModifyIndex, 'ModifyIndex', 'uint64');
  f.string(raw.Namespace, 'Namespace');
  const config = raw.Config;
  if (config !== undefined && config !== null && (typeof config !== 'object' || Array.isArray(config))) {
    throw f.typeError(config, 'Config', 'map[string]interface {}');
  }
  return {
    Name: f.string(raw.Name, 'Name'),
    Type: f.string(raw.Type, 'Type'),
    DisplayName: f.string(raw.DisplayName, 'DisplayName'),
    Description: f.string(raw.Description, 'Description'),
    MaxTokenTTL: f.duration(raw.MaxTokenTTL),
    TokenLocality: f.string(raw.TokenLocality, 'TokenLocality'),
    Config: (config ?? undefined) as Record<string, unknown> | undefined,
  };
}

/** PUT /v1/acl/binding-rule and /v1/acl/binding-rule/:id. */
export function decodeBindingRuleBody(body: Buffer | undefined): BindingRuleInput {
  const raw = decodeRuleObject(body);
  const f = new GoFields(RULE_PREFIX, 'ACLBindingRule');
  f.int(raw.CreateIndex, 'CreateIndex', 'uint64');
  f.int(raw.ModifyIndex, 'ModifyIndex', 'uint64');
  f.string(raw.Namespace, 'Namespace');
  const vars = f.fields(raw.BindVars, 'BindVars', 'structs.ACLTemplatedPolicyVariables', ['Name']);
  return {
    ID: f.string(raw.ID, 'ID'),
    Description: f.string(raw.Description, 'Description'),
    AuthMethod: f.string(raw.AuthMethod, 'AuthMethod'),
    Selector: f.string(raw.Selector, 'Selector'),
    BindType: f.string(raw.BindType, 'BindType'),
    BindName: f.string(raw.BindName, 'BindName'),
    BindVars: vars === undefined ? undefined : { Name: f.string(vars.Name, 'BindVars.name') },
  };
}

/** POST /v1/acl/login. */
export function decodeLoginBody(body: Buffer | undefined): LoginInput {
  const raw = decodeLoginObject(body);
  const f = new GoFields(LOGIN_PREFIX, 'ACLLoginParams');
  f.string(raw.Namespace, 'Namespace');
  return {
    AuthMethod: f.string(raw.AuthMethod, 'AuthMethod'),
    BearerToken: f.string(raw.BearerToken, 'BearerToken'),
    Meta: f.stringMap(raw.Meta, 'Meta'),
  };
}
