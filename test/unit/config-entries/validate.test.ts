// Decoding, Normalize and Validate of each kind, against Consul's texts: good entries keep their
// fields in Consul's JSON shape, bad ones get Consul's words (docs/decisions.md#config-entries).
import { describe, expect, it } from 'vitest';
import { decodeConfigEntry, entryJson, normalizeAndValidate } from '../../../src/config-entries/model.js';
import { AgentError } from '../../../src/core/errors.js';

/** The stored JSON of a body that must be accepted. */
function accepted(body: Record<string, unknown>): Record<string, unknown> {
  const { spec, entry } = decodeConfigEntry(body);
  normalizeAndValidate(spec, entry);
  return entryJson(spec, entry, 7, 8);
}

/** The refusal of a body: its code and message. */
function refused(body: Record<string, unknown>): { code: string; message: string } {
  try {
    const { spec, entry } = decodeConfigEntry(body);
    normalizeAndValidate(spec, entry);
  } catch (err) {
    if (!(err instanceof AgentError)) throw err;
    return { code: err.code, message: err.message };
  }
  throw new Error('accepted');
}

const one = (problem: string): string => `1 error occurred:\n\t* ${problem}\n\n`;

describe('decoding as Consul decodes a config entry', () => {
  it('needs a string Kind of a known kind', () => {
    expect(refused({ Name: 'web' })).toEqual({
      code: 'CONFIG_ENTRY_DECODE',
      message: 'Request decoding failed: Payload does not contain a kind/Kind key at the top level',
    });
    expect(refused({ Kind: 3 }).message).toBe('Request decoding failed: Kind value in payload is not a string');
    expect(refused({ Kind: 'mesh-thing' }).message).toBe(
      'Request decoding failed: invalid config entry kind: mesh-thing',
    );
  });

  it('takes any case, snake_case aliases, lower-case kind, weak types and HCL blocks', () => {
    const json = accepted({
      kind: 'service-defaults',
      name: 'web',
      PROTOCOL: 'HTTP',
      local_connect_timeout_ms: '2500',
      upstream_config: [{ defaults: [{ connect_timeout_ms: 900, protocol: 'GRPC' }] }],
    });
    expect(json).toEqual({
      Kind: 'service-defaults',
      Name: 'web',
      Protocol: 'http',
      TransparentProxy: {},
      MeshGateway: {},
      Expose: {},
      UpstreamConfig: { Defaults: { Protocol: 'grpc', ConnectTimeoutMs: 900, MeshGateway: {} } },
      LocalConnectTimeoutMs: 2500,
      CreateIndex: 7,
      ModifyIndex: 8,
    });
  });

  it('refuses unknown keys, namespaced ones as an enterprise feature, and unconvertible values', () => {
    expect(refused({ Kind: 'service-defaults', Name: 'web', Colour: 'red' }).message).toBe(
      `Request decoding failed: ${one('invalid config key "Colour"')}`,
    );
    expect(refused({ Kind: 'service-defaults', Name: 'web', Namespace: 'ns1' }).message).toBe(
      `Request decoding failed: ${one('invalid config key "Namespace", namespaces are a consul enterprise feature')}`,
    );
    expect(refused({ Kind: 'service-defaults', Name: 'web', Protocol: { a: 1 } }).message).toBe(
      "Request decoding failed: 1 error(s) decoding:\n\n* 'Protocol' expected type 'string', got unconvertible type 'map[string]interface {}', value: 'map[a:1]'",
    );
    expect(refused({ Kind: 'service-defaults', Name: 'web', MaxInboundConnections: 'many' }).message).toBe(
      'Request decoding failed: 1 error(s) decoding:\n\n* cannot parse \'MaxInboundConnections\' as int: strconv.ParseInt: parsing "many": invalid syntax',
    );
    expect(refused({ Kind: 'service-resolver', Name: 'web', ConnectTimeout: '5' }).message).toBe(
      `Request decoding failed: 1 error(s) decoding:\n\n* error decoding 'ConnectTimeout': time: missing unit in duration "5"`,
    );
  });

  it('accepts the raft indexes a read gave back, and drops them', () => {
    expect(accepted({ Kind: 'service-defaults', Name: 'web', CreateIndex: 3, ModifyIndex: 4 })).toMatchObject({
      CreateIndex: 7,
      ModifyIndex: 8,
    });
  });
});

describe('service-defaults', () => {
  it('needs a name that is not the wildcard', () => {
    expect(refused({ Kind: 'service-defaults' })).toEqual({
      code: 'CONFIG_ENTRY_INVALID',
      message: 'Name is required',
    });
    expect(refused({ Kind: 'service-defaults', Name: '*' }).message).toBe(
      'service-defaults name must be the name of a service, and not a wildcard',
    );
  });

  it('checks balance, upstream overrides and defaults, destinations and meta, all at once', () => {
    expect(
      refused({
        Kind: 'service-defaults',
        Name: 'web',
        BalanceInboundConnections: 'fair',
        UpstreamConfig: {
          Overrides: [{ Name: '*' }, { Name: 'db', Limits: { MaxConnections: -1 } }],
          Defaults: { Name: 'x' },
        },
      }).message,
    ).toBe(
      '4 errors occurred:\n\t* invalid value for balance_inbound_connections: fair\n\t* error in upstream override for default/default/*: Wildcard name is not supported\n\t* error in upstream override for default/default/db: 1 error occurred:\n\t* max connections cannot be negative\n\n\n\t* error in upstream defaults: Name must be empty\n\n',
    );
    expect(
      refused({
        Kind: 'service-defaults',
        Name: 'web',
        UpstreamConfig: {},
        Destination: { Addresses: ['a.com'], Port: 80 },
      }).message,
    ).toBe(one('UpstreamConfig and Destination are mutually exclusive for service defaults'));
    expect(
      refused({ Kind: 'service-defaults', Name: 'web', Destination: { Addresses: ['a.com', 'a.com', '*.b'], Port: 0 } })
        .message,
    ).toBe(
      "3 errors occurred:\n\t* Duplicate address 'a.com' is not allowed\n\t* Destination address '*.b' is invalid Could not validate address *.b as an IP or Hostname\n\t* Invalid Port number 0\n\n",
    );
    expect(refused({ Kind: 'service-defaults', Name: 'web', Meta: { ['k'.repeat(129)]: 'v' } }).message).toBe(
      one(`Meta key "${'k'.repeat(129)}" exceeds maximum length 128`),
    );
  });

  it('keeps what it was given, in Consul order', () => {
    expect(
      Object.keys(
        accepted({
          Kind: 'service-defaults',
          Name: 'web',
          Meta: { a: 'b' },
          Mode: 'transparent',
          Destination: { Addresses: ['10.0.0.1'], Port: 443 },
          BalanceInboundConnections: 'exact_balance',
        }),
      ),
    ).toEqual([
      'Kind',
      'Name',
      'Protocol',
      'Mode',
      'TransparentProxy',
      'MeshGateway',
      'Expose',
      'Destination',
      'BalanceInboundConnections',
      'Meta',
      'CreateIndex',
      'ModifyIndex',
    ]);
  });
});

describe('proxy-defaults', () => {
  it('is named global (an empty name becomes global), with its Config as given', () => {
    expect(accepted({ Kind: 'proxy-defaults', Config: { protocol: 'http', n: 1 } })).toEqual({
      Kind: 'proxy-defaults',
      Name: 'global',
      Config: { n: 1, protocol: 'http' },
      TransparentProxy: {},
      MeshGateway: {},
      Expose: {},
      AccessLogs: {},
      CreateIndex: 7,
      ModifyIndex: 8,
    });
    expect(accepted({ Kind: 'proxy-defaults', Name: 'global' }).Config).toBeNull();
    expect(refused({ Kind: 'proxy-defaults', Name: 'web' })).toEqual({
      code: 'CONFIG_ENTRY_INVALID',
      message: 'invalid name ("web"), only "global" is supported',
    });
  });
});

describe('service-resolver', () => {
  it('writes its timeouts first, as Go text', () => {
    const json = accepted({ Kind: 'service-resolver', Name: 'web', RequestTimeout: '1m30s', ConnectTimeout: 5e9 });
    expect(Object.keys(json).slice(0, 4)).toEqual(['ConnectTimeout', 'RequestTimeout', 'Kind', 'Name']);
    expect(json).toMatchObject({ ConnectTimeout: '5s', RequestTimeout: '1m30s' });
  });

  it.each([
    [
      { Subsets: { V1: {} } },
      `Subset "V1" is invalid: must be 63 characters or fewer, begin or end with lower case alphanumeric characters, and contain lower case alphanumeric characters or '-' in between`,
    ],
    [{ Subsets: { v1: { Filter: 'Service.Meta.v ==' } } }, /^Filter for subset "v1" is not a valid expression: /],
    [{ DefaultSubset: 'v2' }, 'DefaultSubset "v2" is not a valid subset'],
    [{ Redirect: {} }, 'Redirect is empty'],
    [{ Redirect: { ServiceSubset: 'v1' } }, 'Redirect.ServiceSubset defined without Redirect.Service'],
    [{ Redirect: { Service: 'db' }, Failover: { '*': { Service: 'x' } } }, 'Redirect and Failover cannot both be set'],
    [{ Failover: { v9: { Service: 'x' } } }, 'Bad Failover["v9"]: not a valid subset subset'],
    [
      { Failover: { '*': { Datacenters: ['dc2'], Targets: [{ Service: 'x' }] } } },
      'Bad Failover["*"]: Targets cannot be set with Datacenters',
    ],
    [{ LoadBalancer: { Policy: 'fastest' } }, 'Bad LoadBalancer policy: "fastest" is not supported'],
    [
      { LoadBalancer: { Policy: 'random', HashPolicies: [{ Field: 'header', FieldValue: 'x' }] } },
      'Bad LoadBalancer configuration: HashPolicies specified for non-hash-based Policy: "random"',
    ],
    [{ ConnectTimeout: '-1s' }, "Bad ConnectTimeout '-1s', must be >= 0"],
  ])('refuses %j', (fields, text) => {
    const { message } = refused({ Kind: 'service-resolver', Name: 'web', ...fields });
    if (typeof text === 'string') expect(message).toBe(text);
    else expect(message).toMatch(text);
  });

  it('accepts subsets, a default one and failover', () => {
    expect(
      accepted({
        Kind: 'service-resolver',
        Name: 'web',
        DefaultSubset: 'v1',
        Subsets: { v1: { Filter: 'Service.Meta.version == v1', OnlyPassing: true } },
        Failover: { '*': { Datacenters: ['dc2'] } },
      }),
    ).toMatchObject({ Subsets: { v1: { Filter: 'Service.Meta.version == v1', OnlyPassing: true } } });
  });
});

describe('service-splitter', () => {
  it('needs splits summing to 100, each destination once', () => {
    expect(refused({ Kind: 'service-splitter', Name: 'web' }).message).toBe('no splits configured');
    expect(
      refused({ Kind: 'service-splitter', Name: 'web', Splits: [{ Weight: 33.33 }, { Weight: 66.66, Service: 'b' }] })
        .message,
    ).toBe('the sum of all split weights must be 100, not 99.989998');
    expect(
      refused({ Kind: 'service-splitter', Name: 'web', Splits: [{ Weight: 50 }, { Weight: 50, Service: 'web' }] })
        .message,
    ).toBe('split destination occurs more than once: service="web", subset="", namespace="", partition=""');
    expect(
      accepted({
        Kind: 'service-splitter',
        Name: 'web',
        Splits: [{ Weight: 10.004 }, { Weight: 89.996, ServiceSubset: 'v2' }],
      }).Splits,
    ).toEqual([{ Weight: 10 }, { Weight: 90, ServiceSubset: 'v2' }]);
  });
});

describe('service-router', () => {
  it.each([
    [[{ Match: { HTTP: { PathExact: 'x' } } }], `Route[0] PathExact doesn't start with '/': "x"`],
    [
      [{ Match: { HTTP: { PathExact: '/a', PathPrefix: '/b' } } }],
      'Route[0] should only contain at most one of PathExact, PathPrefix, or PathRegex',
    ],
    [
      [{ Match: { HTTP: { Header: [{ Name: 'x' }] } } }],
      'Route[0] Header[0] should only contain one of Present, Exact, Prefix, Suffix, or Regex',
    ],
    [[{ Match: { HTTP: { QueryParam: [{ Exact: 'x' }] } } }], 'Route[0] QueryParam[0] missing required Name field'],
    [[{}, { Match: { HTTP: { Methods: ['get', 'GET'] } } }], 'Route[1] Methods contains "GET" more than once'],
    [
      [{ Destination: { PrefixRewrite: '/x' } }],
      'Route[0] cannot make use of PrefixRewrite without configuring either PathExact or PathPrefix',
    ],
    [[{ Destination: { RetryOn: ['sometimes'] } }], 'Route[0] contains an invalid retry condition: "sometimes"'],
  ])('refuses %j', (routes, text) => {
    expect(refused({ Kind: 'service-router', Name: 'web', Routes: routes }).message).toBe(text);
  });

  it('upper-cases methods and writes a destination timeout first', () => {
    const json = accepted({
      Kind: 'service-router',
      Name: 'web',
      Routes: [
        {
          Match: { HTTP: { PathPrefix: '/api', Methods: ['get'] } },
          Destination: { Service: 'api', RequestTimeout: '2s' },
        },
      ],
    });
    expect(json.Routes).toEqual([
      {
        Match: { HTTP: { PathPrefix: '/api', Methods: ['GET'] } },
        Destination: { RequestTimeout: '2s', Service: 'api' },
      },
    ]);
    expect(accepted({ Kind: 'service-router', Name: 'web' }).Routes).toBeNull();
  });
});

describe('service-intentions', () => {
  it('defaults Type, computes Precedence and sorts by it, keeping the written order within one', () => {
    const json = accepted({
      Kind: 'service-intentions',
      Name: 'db',
      Sources: [
        { Name: '*', Action: 'deny' },
        { Name: 'web', Action: 'allow' },
        { Name: 'api', Permissions: [{ Action: 'allow', HTTP: { PathPrefix: '/v1', Methods: ['get'] } }] },
      ],
    });
    expect(json.Sources).toEqual([
      { Name: 'web', Action: 'allow', Precedence: 9, Type: 'consul', Namespace: 'default' },
      {
        Name: 'api',
        Permissions: [{ Action: 'allow', HTTP: { PathPrefix: '/v1', Methods: ['GET'] } }],
        Precedence: 9,
        Type: 'consul',
        Namespace: 'default',
      },
      { Name: '*', Action: 'deny', Precedence: 8, Type: 'consul', Namespace: 'default' },
    ]);
  });

  it.each([
    [{ Sources: [] }, 'At least one source is required'],
    [{ Name: 'd*' }, "Name: wildcard character '*' cannot be used with partial values"],
    [{ Sources: [{ Action: 'allow' }] }, 'Sources[0].Name is required'],
    [
      { Sources: [{ Name: 'w*', Action: 'allow' }] },
      "Sources[0].Name: wildcard character '*' cannot be used with partial values",
    ],
    [{ Sources: [{ Name: 'web' }] }, "Sources[0].Action must be set to 'allow' or 'deny'"],
    [{ Sources: [{ Name: 'web', Action: 'allow', LegacyMeta: { a: 'b' } }] }, 'Sources[0].LegacyMeta must be omitted'],
    [{ Sources: [{ Name: 'web', Action: 'allow', Type: 'external' }] }, "Sources[0].Type must be set to 'consul'"],
    [
      { Sources: [{ Name: 'web', Action: 'allow', Permissions: [{ Action: 'allow', HTTP: { PathExact: '/a' } }] }] },
      'Sources[0].Action must be omitted if Permissions are specified',
    ],
    [{ Sources: [{ Name: 'web', Permissions: [{ Action: 'allow' }] }] }, 'Sources[0].Permissions[0].HTTP is required'],
    [
      { Name: '*', Sources: [{ Name: 'web', Permissions: [{ Action: 'allow', HTTP: { PathExact: '/a' } }] }] },
      'Sources[0].Permissions cannot be specified on intentions with wildcarded destinations',
    ],
    [
      {
        Sources: [
          { Name: 'web', Action: 'allow' },
          { Name: 'web', Action: 'deny' },
        ],
      },
      'Sources[1] defines "default/web" more than once',
    ],
  ])('refuses %j', (fields, text) => {
    expect(
      refused({ Kind: 'service-intentions', Name: 'db', Sources: [{ Name: 'x', Action: 'allow' }], ...fields }).message,
    ).toBe(text);
  });
});
