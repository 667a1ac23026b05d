// Each table's row schema (declared beside its row type) takes the rows the agent writes and
// refuses the bad values a client agent's etcd credentials can write (docs/cluster-security.md#bad-rows);
// BadRows tells of each bad revision of a key once; RowDecoder takes a table's scalar (the catalog's
// index rows' `true`) again unparsed, and parses and checks everything else each time.
import { describe, expect, it } from 'vitest';
import { globalManagementPolicy } from '../../../../src/acl/builtin.js';
import { newToken } from '../../../../src/acl/init.js';
import { aclMetaSchema, storedPolicySchema, storedTokenSchema } from '../../../../src/acl/model.js';
import { parseRules } from '../../../../src/acl/rules/parse.js';
import { readMemberEntry } from '../../../../src/cluster/member-entry.js';
import {
  caTableSchema,
  storedRootSchema,
  type StoredCaConfig,
  type StoredRoot,
} from '../../../../src/connect/ca/model.js';
import { storedIntentionSchema } from '../../../../src/connect/intentions/model.js';
import { normalizeIntention, storedIntention } from '../../../../src/connect/intentions/validate.js';
import { silentLogger } from '../../../../src/core/log.js';
import { Counter } from '../../../../src/core/metrics.js';
import { storedKv, storedKvSchema } from '../../../../src/kv/entries.js';
import { CATALOG_INDEX, CATALOG_SERVICES, storedServiceSchema } from '../../../../src/catalog/model.js';
import { BadRows, decodeRow, RowDecoder, rowProblem } from '../../../../src/state/etcd/row-check.js';
import type { TableSchema, TableSchemas } from '../../../../src/state/types.js';
import { z } from 'zod';

const ok = (schema: TableSchema, value: unknown, key = 'k'): string | undefined => rowProblem(schema, key, value);

describe('intention rows', () => {
  it('take what both write APIs store, L7 included, and refuse null, {} and wrong types', () => {
    const l4 = storedIntention(
      normalizeIntention({ SourceName: 'web', DestinationName: 'db', Action: 'deny', Meta: { a: 'b' } }, 'default'),
    );
    const legacy = storedIntention(
      normalizeIntention({ SourceName: 'web', DestinationName: 'db', Action: 'allow' }, 'default'),
      { ID: 'id', CreatedAt: 't', UpdatedAt: 't', Hash: 'h' },
    );
    const l7 = storedIntention(
      normalizeIntention(
        {
          SourceName: 'web',
          DestinationName: 'db',
          Permissions: [
            { Action: 'allow', HTTP: { PathPrefix: '/', Methods: ['get'], Header: [{ Name: 'x', Present: true }] } },
          ],
        },
        'default',
      ),
    );
    for (const row of [l4, legacy, l7])
      expect(ok(storedIntentionSchema, JSON.parse(JSON.stringify(row)))).toBeUndefined();
    for (const bad of [
      null,
      {},
      [],
      { ...l4, SourceName: 5 },
      { ...l4, Action: 'maybe' },
      { ...l4, Precedence: '9' },
    ]) {
      expect(ok(storedIntentionSchema, bad)).toBeDefined();
    }
  });
});

describe('KV rows', () => {
  it('take what a PUT stores, uint64 flags included, and refuse what would leak into Flags or Value', () => {
    for (const row of [
      storedKv(0n, Buffer.alloc(0)),
      storedKv(7n, Buffer.from('v')),
      storedKv(2n ** 64n - 1n, Buffer.from([0, 255])),
    ]) {
      expect(ok(storedKvSchema, row)).toBeUndefined();
    }
    for (const bad of [
      null,
      {},
      { Flags: 1 },
      { Value: null },
      { Flags: -1, Value: null },
      { Flags: 'x', Value: null },
      { Flags: '18446744073709551616', Value: null },
      { Flags: 0, Value: 5 },
    ]) {
      expect(ok(storedKvSchema, bad)).toBeDefined();
    }
    const schemas = new Map([['kv', storedKvSchema]]);
    expect(decodeRow(schemas, 'kv', 'k', Buffer.from('not json'))).toEqual({ ok: false, problem: 'not JSON' });
    expect(decodeRow(schemas, 'kv', 'k', Buffer.from('{"Flags":3,"Value":null}'))).toEqual({
      ok: true,
      value: { Flags: 3, Value: null },
    });
    // A table without a schema is not checked.
    expect(decodeRow(schemas, 'other', 'k', Buffer.from('null'))).toEqual({ ok: true, value: null });
  });
});

describe('CA rows', () => {
  const config: StoredCaConfig = {
    ClusterID: 'c',
    TrustDomain: 'c.consul',
    Provider: 'consul',
    Config: { LeafCertTTL: '72h' },
    ForceWithoutCrossSigning: false,
    Settings: {
      leafCertTtlMs: 1,
      intermediateCertTtlMs: 1,
      rootCertTtlMs: 1,
      privateKeyType: 'ec',
      privateKeyBits: 256,
      csrMaxPerSecond: 50,
      csrMaxConcurrent: 0,
    },
  };
  const root: StoredRoot = {
    ID: 'r',
    Name: 'n',
    SerialNumber: '1',
    SigningKeyID: 's',
    ExternalTrustDomain: 't',
    NotBefore: 'a',
    NotAfter: 'b',
    RootCert: 'pem',
    IntermediateCerts: null,
    Active: true,
    PrivateKeyType: 'ec',
    PrivateKeyBits: 256,
    RotatedOutAt: null,
  };

  it('check each singleton of connect-ca by its key: {} config and a non-numeric serial are refused', () => {
    expect(ok(caTableSchema, config, 'config')).toBeUndefined();
    expect(ok(caTableSchema, { Next: '18446744073709551615' }, 'serial')).toBeUndefined();
    expect(
      ok(
        caTableSchema,
        { RootID: 'r', PrivateKey: 'k', RootCert: 'c', SuppliedPrivateKey: null, SuppliedRootCert: null },
        'provider',
      ),
    ).toBeUndefined();
    expect(ok(caTableSchema, {}, 'config')).toContain('ClusterID');
    expect(ok(caTableSchema, { ...config, Settings: {} }, 'config')).toBeDefined();
    expect(ok(caTableSchema, { Next: 'abc' }, 'serial')).toBeDefined();
    expect(ok(caTableSchema, config, 'constructor')).toContain('no row of this table');
  });

  it('take a root and refuse null', () => {
    expect(ok(storedRootSchema, root)).toBeUndefined();
    expect(
      ok(storedRootSchema, { ...root, IntermediateCerts: ['pem'], Active: false, RotatedOutAt: 'x' }),
    ).toBeUndefined();
    expect(ok(storedRootSchema, null)).toBeDefined();
    expect(ok(storedRootSchema, { ...root, Active: 'yes' })).toBeDefined();
  });
});

describe('ACL rows', () => {
  it('take the tokens, policies and bootstrap marker the agent writes', async () => {
    const token = newToken('a', { SecretID: 's' }, 'd', [{ ID: 'p' }], 't', {
      ServiceIdentities: [{ ServiceName: 'web', Datacenters: ['dc1'] }],
      NodeIdentities: [{ NodeName: 'n', Datacenter: 'dc1' }],
      ExpirationTime: 'x',
    });
    expect(ok(storedTokenSchema, token)).toBeUndefined();
    expect(ok(storedTokenSchema, { ...token, Policies: null })).toBeDefined();
    // A cluster's view holds the secret's hash instead (docs/decisions.md D23): one of the two, never both or none.
    const { SecretID: _secret, ...withoutSecret } = token;
    expect(ok(storedTokenSchema, { ...withoutSecret, SecretHash: 'h' })).toBeUndefined();
    expect(ok(storedTokenSchema, withoutSecret)).toBeDefined();
    expect(ok(storedTokenSchema, { ...token, SecretHash: 'h' })).toBeDefined();
    const parsed = await parseRules(
      'key_prefix "" { policy = "read" }\nservice "web" { policy = "write" intentions = "read" }\noperator = "read"',
    );
    const policy = { ...globalManagementPolicy(), Parsed: parsed };
    expect(ok(storedPolicySchema, JSON.parse(JSON.stringify(policy)))).toBeUndefined();
    expect(ok(storedPolicySchema, globalManagementPolicy())).toBeUndefined();
    expect(ok(storedPolicySchema, { ...policy, Parsed: { key_prefix: [{ name: '', policy: 'all' }] } })).toBeDefined();
    expect(ok(aclMetaSchema, { AccessorID: 'a' }, 'bootstrap')).toBeUndefined();
    expect(ok(aclMetaSchema, null, 'bootstrap')).toBeDefined();
  });
});

describe('member entries', () => {
  it('take an agent\'s record and refuse null, {"Name":5} and text', () => {
    const record = {
      name: 'n',
      id: 'i',
      address: '127.0.0.1',
      port: 8500,
      datacenter: 'dc1',
      server: false,
      version: '1',
      aclsEnabled: false,
    };
    expect(readMemberEntry(Buffer.from(JSON.stringify(record)))).toEqual({ ok: true, entry: record });
    for (const bad of ['null', '{"Name":5}', 'not json', JSON.stringify({ ...record, port: 'x' })]) {
      expect(readMemberEntry(Buffer.from(bad)).ok).toBe(false);
    }
  });
});

describe('BadRows', () => {
  it('tells of each bad revision of a key once, however often it is read', () => {
    const counter = new Counter();
    const bad = new BadRows(silentLogger, counter);
    bad.report('/svc/data/t/k', 5, 'p');
    bad.report('/svc/data/t/k', 5, 'p');
    expect(counter.count).toBe(1);
    bad.report('/svc/data/t/k', 6, 'p');
    bad.report('/svc/data/t/other', 6, 'p');
    expect(bad.count).toBe(3);
  });
});

describe('RowDecoder', () => {
  const schemas: TableSchemas = new Map<string, TableSchema>([
    [CATALOG_INDEX, z.literal(true)],
    [CATALOG_SERVICES, storedServiceSchema],
    ['by-key', { byKey: { yes: z.literal(true), no: z.literal(false) } }],
  ]);
  const bytes = (text: string): Buffer => Buffer.from(text);

  it("takes a table's scalar again without parsing it, and still refuses a bad value after a good one", () => {
    const decoder = new RowDecoder(schemas);
    const first = decoder.decode(CATALOG_INDEX, 's/web', bytes('true'));
    expect(first).toEqual({ ok: true, value: true });
    // The same bytes (another buffer) answer the same result, unparsed.
    expect(decoder.decode(CATALOG_INDEX, 'n/node', bytes('true'))).toBe(first);
    for (const bad of ['false', 'tru', '"true"', 'True']) {
      expect(decoder.decode(CATALOG_INDEX, 's/web', bytes(bad)), bad).toMatchObject({ ok: false });
    }
    expect(decoder.decode(CATALOG_INDEX, 's/web', bytes('true'))).toEqual({ ok: true, value: true });
  });

  it('parses and checks every object, so no two rows share one', () => {
    const decoder = new RowDecoder(schemas);
    const service = {
      Kind: '',
      ID: 'web',
      Service: 'web',
      Tags: [],
      Address: '',
      Meta: {},
      Port: 80,
      Weights: { Passing: 1, Warning: 1 },
      EnableTagOverride: false,
      Proxy: {},
      Connect: {},
    };
    const a = decoder.decode(CATALOG_SERVICES, 'n/web', bytes(JSON.stringify(service)));
    const b = decoder.decode(CATALOG_SERVICES, 'm/web', bytes(JSON.stringify(service)));
    expect(a).toEqual({ ok: true, value: service });
    expect(a.ok && b.ok && a.value !== b.value).toBe(true);
    expect(decoder.decode(CATALOG_SERVICES, 'n/web', bytes(JSON.stringify({ ...service, Port: 'x' })))).toMatchObject({
      ok: false,
    });
  });

  it('checks a table checked by key every time: the same bytes may be good under one key and bad under another', () => {
    const decoder = new RowDecoder(schemas);
    expect(decoder.decode('by-key', 'yes', bytes('true'))).toEqual({ ok: true, value: true });
    expect(decoder.decode('by-key', 'no', bytes('true'))).toMatchObject({ ok: false });
  });
});
