import { describe, expect, it } from 'vitest';
import {
  decodeBootstrapBody,
  decodePolicyBody,
  decodePreviewBody,
  decodeRoleBody,
  decodeTokenBody,
} from '../../../src/http/handlers/acl-body.js';
import { agentErrorOf } from '../../support/errors.js';

const body = (value: unknown): Buffer => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

function decodeError(fn: () => unknown): [string, string] {
  const err = agentErrorOf(fn);
  return [err.code, err.message];
}

describe('decodeTokenBody', () => {
  it('matches field names in any case, nested ones too', () => {
    const input = decodeTokenBody(
      body({
        description: 'd',
        POLICIES: [{ name: 'p' }, { id: 'x' }],
        serviceidentities: [{ servicename: 'web', datacenters: ['dc1'] }],
        NodeIdentities: [{ nodename: 'n', DATACENTER: 'dc1' }],
        local: true,
        namespace: 'team',
      }),
    );
    expect(input).toMatchObject({
      Description: 'd',
      Policies: [{ Name: 'p' }, { ID: 'x' }],
      ServiceIdentities: [{ ServiceName: 'web', Datacenters: ['dc1'] }],
      NodeIdentities: [{ NodeName: 'n', Datacenter: 'dc1' }],
      Local: true,
      Namespace: 'team',
    });
  });

  it('accepts a token read back whole (CreateTime, Hash, indexes are ignored)', () => {
    const input = decodeTokenBody(
      body({
        AccessorID: 'a',
        SecretID: 's',
        CreateTime: '2024-05-01T10:00:00.123456789Z',
        Hash: 'abc=',
        CreateIndex: 5,
        ModifyIndex: 6,
      }),
    );
    expect(input).toMatchObject({ AccessorID: 'a', SecretID: 's' });
  });

  it('reads ExpirationTTL as a Go duration or as nanoseconds, and ExpirationTime as RFC 3339', () => {
    expect(decodeTokenBody(body({ ExpirationTTL: '1h30m' })).ExpirationTTL).toBe(90 * 60_000);
    expect(decodeTokenBody(body({ ExpirationTTL: 2_000_000_000 })).ExpirationTTL).toBe(2000);
    expect(decodeTokenBody(body({ ExpirationTime: '2024-05-01T12:00:00.5+02:00' })).ExpirationTime).toBe(
      Date.UTC(2024, 4, 1, 10, 0, 0, 500),
    );
  });

  it.each<[unknown, string]>([
    ['', 'Token decoding failed: EOF'],
    [[], 'Token decoding failed: json: cannot unmarshal array into Go value of type structs.ACLToken'],
    [{ Bogus: 1 }, 'Token decoding failed: json: unknown field "Bogus"'],
    [{ Policies: [{ ID: 'x', Extra: 1 }] }, 'Token decoding failed: json: unknown field "Extra"'],
    [
      { Description: 5 },
      'Token decoding failed: json: cannot unmarshal number into Go struct field ACLToken.Description of type string',
    ],
    [
      { Local: 'yes' },
      'Token decoding failed: json: cannot unmarshal string into Go struct field ACLToken.Local of type bool',
    ],
    [
      { Policies: 'p' },
      'Token decoding failed: json: cannot unmarshal string into Go struct field ACLToken.Policies of type []structs.ACLTokenPolicyLink',
    ],
    [
      { Policies: ['p'] },
      'Token decoding failed: json: cannot unmarshal string into Go struct field ACLToken.Policies of type structs.ACLTokenPolicyLink',
    ],
    [
      { ServiceIdentities: [{ ServiceName: 'web', Datacenters: 'dc1' }] },
      'Token decoding failed: json: cannot unmarshal string into Go struct field ACLToken.ServiceIdentities.Datacenters of type []string',
    ],
    [
      { CreateIndex: -1 },
      'Token decoding failed: json: cannot unmarshal number -1 into Go struct field ACLToken.CreateIndex of type uint64',
    ],
    [{ ExpirationTTL: 'soon' }, 'Token decoding failed: time: invalid duration "soon"'],
    [
      { ExpirationTime: 'tomorrow' },
      'Token decoding failed: parsing time "tomorrow" as "2006-01-02T15:04:05Z07:00": cannot parse "tomorrow" as "2006"',
    ],
    [{ ExpirationTime: 5 }, 'Token decoding failed: Time.UnmarshalJSON: input is not a JSON string'],
  ])('%j → 400 %s', (value, message) => {
    expect(decodeError(() => decodeTokenBody(body(value)))).toEqual(['BODY_DECODE', message]);
  });

  it("reads Consul 1.17's TemplatedPolicies: the name, the variables (matched case-insensitively) and Datacenters", () => {
    const input = decodeTokenBody(
      body({
        templatedpolicies: [
          { TemplateName: 'builtin/service', TemplateVariables: { name: 'web' }, Datacenters: ['dc1'] },
        ],
      }),
    );
    expect(input.TemplatedPolicies).toEqual([
      { TemplateName: 'builtin/service', TemplateVariables: { Name: 'web' }, Datacenters: ['dc1'] },
    ]);
    expect(decodeTokenBody(body({ TemplatedPolicies: [{ TemplateName: 'builtin/dns' }] })).TemplatedPolicies).toEqual([
      { TemplateName: 'builtin/dns', TemplateVariables: undefined, Datacenters: undefined },
    ]);
    expect(decodeTokenBody(body({ TemplatedPolicies: [] })).TemplatedPolicies).toEqual([]);
    expect(decodeError(() => decodeTokenBody(body({ TemplatedPolicies: 'builtin/service' })))).toEqual([
      'BODY_DECODE',
      'Token decoding failed: json: cannot unmarshal string into Go struct field ACLToken.TemplatedPolicies of type structs.ACLTemplatedPolicies',
    ]);
    expect(decodeError(() => decodeTokenBody(body({ TemplatedPolicies: [{ TemplateName: 'x', Bogus: 1 }] })))).toEqual([
      'BODY_DECODE',
      'Token decoding failed: json: unknown field "Bogus"',
    ]);
  });

  it('a JSON null leaves the zero value', () => {
    expect(decodeTokenBody(body({ Description: null, Policies: null, ExpirationTime: null }))).toMatchObject({
      Description: undefined,
      Policies: undefined,
      ExpirationTime: undefined,
    });
  });
});

describe('decodePolicyBody', () => {
  it('reads the policy fields', () => {
    expect(
      decodePolicyBody(body({ name: 'p', rules: 'acl = "read"', datacenters: ['dc1'], Hash: 'x', CreateIndex: 1 })),
    ).toEqual({
      ID: undefined,
      Name: 'p',
      Description: undefined,
      Rules: 'acl = "read"',
      Datacenters: ['dc1'],
    });
  });

  it('words its failures with its own prefix', () => {
    expect(decodeError(() => decodePolicyBody(body({ Namespace: 'x' })))).toEqual([
      'BODY_DECODE',
      'Policy decoding failed: json: unknown field "Namespace"',
    ]);
    expect(decodeError(() => decodePolicyBody(body({ Rules: {} })))).toEqual([
      'BODY_DECODE',
      'Policy decoding failed: json: cannot unmarshal object into Go struct field ACLPolicy.Rules of type string',
    ]);
  });
});

describe('decodeBootstrapBody', () => {
  it('is optional, and reads BootstrapSecret', () => {
    expect(decodeBootstrapBody(undefined)).toBeUndefined();
    expect(decodeBootstrapBody(Buffer.alloc(0))).toBeUndefined();
    expect(decodeBootstrapBody(body({ bootstrapsecret: 's' }))).toBe('s');
    expect(decodeError(() => decodeBootstrapBody(body({ Other: 1 })))).toEqual([
      'BODY_DECODE',
      'Request decoding failed: json: unknown field "Other"',
    ]);
  });
});

describe('decodeRoleBody', () => {
  it("reads what structs.ACLRole accepts, a role read back included; refuses anything else with Consul's prefix", () => {
    const input = decodeRoleBody(
      body({
        name: 'ops',
        Description: 'd',
        Policies: [{ Name: 'p' }],
        ServiceIdentities: [{ ServiceName: 'web' }],
        NodeIdentities: [{ NodeName: 'n1', Datacenter: 'dc1' }],
        TemplatedPolicies: [{ TemplateName: 'builtin/node', TemplateVariables: { Name: 'n2' } }],
        Hash: 'x',
        CreateIndex: 4,
        ModifyIndex: 5,
      }),
    );
    expect(input).toMatchObject({
      Name: 'ops',
      Description: 'd',
      Policies: [{ Name: 'p' }],
      ServiceIdentities: [{ ServiceName: 'web' }],
      NodeIdentities: [{ NodeName: 'n1', Datacenter: 'dc1' }],
      TemplatedPolicies: [{ TemplateName: 'builtin/node', TemplateVariables: { Name: 'n2' } }],
    });
    expect(decodeError(() => decodeRoleBody(body({ Roles: [] })))).toEqual([
      'BODY_DECODE',
      'Role decoding failed: json: unknown field "Roles"',
    ]);
    expect(decodeError(() => decodeRoleBody(body({ Policies: {} })))).toEqual([
      'BODY_DECODE',
      'Role decoding failed: json: cannot unmarshal object into Go struct field ACLRole.Policies of type []structs.ACLRolePolicyLink',
    ]);
  });
});

describe('decodePreviewBody', () => {
  it('reads the name variable in any case; an empty body is no variables', () => {
    expect(decodePreviewBody(body({ Name: 'api' }))).toEqual({ Name: 'api' });
    expect(decodePreviewBody(body({ name: 'api' }))).toEqual({ Name: 'api' });
    expect(decodePreviewBody(undefined)).toEqual({});
    expect(decodeError(() => decodePreviewBody(body({ Nom: 'x' })))).toEqual([
      'BODY_DECODE',
      'Failed to decode request body: json: unknown field "Nom"',
    ]);
  });
});
