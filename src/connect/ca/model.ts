// What the CA keeps in the state store. The `connect-ca` table holds the configuration, the active
// CA key (never served by any endpoint) and the cluster-wide serial counter; `connect-ca-roots`
// holds one row per root, keyed by its ID, so the roots' own index is that table's index.
import { z } from 'zod';
import type { CaConfig } from '../../config/types.js';

export const CA_TABLE = 'connect-ca';
export const ROOTS_TABLE = 'connect-ca-roots';
export const CONFIG_KEY = 'config';
export const PROVIDER_KEY = 'provider';
export const SERIAL_KEY = 'serial';

/** The CA settings in force, resolved (durations in ms, bits defaulted per key type). */
export type CaSettings = Omit<CaConfig, 'privateKey' | 'rootCert'>;

export interface StoredCaConfig {
  readonly ClusterID: string;
  /** Fixed at bootstrap: configured, else `<ClusterID>.consul` (docs/decisions.md D9). */
  readonly TrustDomain?: string;
  readonly Provider: 'consul';
  /** The provider config as the API shows it (CamelCase keys; never the private key). */
  readonly Config: Readonly<Record<string, unknown>>;
  readonly ForceWithoutCrossSigning: boolean;
  readonly Settings: CaSettings;
}

/** The active CA's key material: private, read only by the signer. */
export interface StoredProvider {
  readonly RootID: string;
  readonly PrivateKey: string;
  readonly RootCert: string;
  /** What the operator supplied (the provider's identity: changing it rotates the root). */
  readonly SuppliedPrivateKey: string | null;
  readonly SuppliedRootCert: string | null;
}

export interface StoredSerial {
  /** The next serial number to hand out, as decimal digits (uint64). */
  readonly Next: string;
}

/** A root as stored; the API shape (docs/decisions.md#ca-roots) is this plus the row's indexes. */
export interface StoredRoot {
  readonly ID: string;
  readonly Name: string;
  /** Decimal digits: a uint64 may exceed 2^53. */
  readonly SerialNumber: string;
  readonly SigningKeyID: string;
  readonly ExternalTrustDomain: string;
  readonly NotBefore: string;
  readonly NotAfter: string;
  readonly RootCert: string;
  readonly IntermediateCerts: readonly string[] | null;
  readonly Active: boolean;
  readonly PrivateKeyType: string;
  readonly PrivateKeyBits: number;
  /** When it stopped being the active root (never serialised; drives pruning). */
  readonly RotatedOutAt: string | null;
}

// The rows' schemas, checked wherever the store is shared (src/state/etcd/row-check.ts): types,
// not policy (SkipValidate lets the API store settings the config checks would refuse).
const settingsSchema = z.object({
  leafCertTtlMs: z.number(),
  intermediateCertTtlMs: z.number(),
  rootCertTtlMs: z.number(),
  privateKeyType: z.enum(['ec', 'rsa']),
  privateKeyBits: z.number(),
  csrMaxPerSecond: z.number(),
  csrMaxConcurrent: z.number(),
}) satisfies z.ZodType<CaSettings>;

const storedCaConfigSchema = z.object({
  ClusterID: z.string(),
  TrustDomain: z.string().exactOptional(),
  Provider: z.literal('consul'),
  Config: z.record(z.string(), z.unknown()),
  ForceWithoutCrossSigning: z.boolean(),
  Settings: settingsSchema,
}) satisfies z.ZodType<StoredCaConfig>;

const storedProviderSchema = z.object({
  RootID: z.string(),
  PrivateKey: z.string(),
  RootCert: z.string(),
  SuppliedPrivateKey: z.string().nullable(),
  SuppliedRootCert: z.string().nullable(),
}) satisfies z.ZodType<StoredProvider>;

const storedSerialSchema = z.object({
  Next: z.string().regex(/^\d{1,20}$/, 'expected decimal digits'),
}) satisfies z.ZodType<StoredSerial>;

/** `connect-ca`: one schema per singleton row. */
export const caTableSchema = {
  byKey: { [CONFIG_KEY]: storedCaConfigSchema, [PROVIDER_KEY]: storedProviderSchema, [SERIAL_KEY]: storedSerialSchema },
};

export const storedRootSchema = z.object({
  ID: z.string(),
  Name: z.string(),
  SerialNumber: z.string(),
  SigningKeyID: z.string(),
  ExternalTrustDomain: z.string(),
  NotBefore: z.string(),
  NotAfter: z.string(),
  RootCert: z.string(),
  IntermediateCerts: z.array(z.string()).nullable(),
  Active: z.boolean(),
  PrivateKeyType: z.string(),
  PrivateKeyBits: z.number(),
  RotatedOutAt: z.string().nullable(),
}) satisfies z.ZodType<StoredRoot>;
