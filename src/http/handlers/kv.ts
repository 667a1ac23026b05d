// /v1/kv/<key>: GET (single, ?recurse, ?keys[&separator], ?raw), PUT (raw body, ?flags, ?cas),
// DELETE (?recurse, ?cas), blocking on the key or prefix. Shapes, texts: docs/decisions.md#kv-api.
// A value the store could not read (written into etcd by something else) fails its own key only:
// `?recurse` leaves it out, `?keys` lists it (docs/cluster-security.md#bad-rows). `?keys` reads
// keys without values; a listing larger than KV_LISTING_MAX_BYTES is refused (413), never built.
import { permissionDenied } from '../../acl/errors.js';
import type { Identity } from '../../acl/identity.js';
import { agentError } from '../../core/errors.js';
import { parseUint64 } from '../../core/uint.js';
import { KV_LISTING_MAX_BYTES, KV_TABLE, listKeys, storedKv, toEntryJson, type StoredKv } from '../../kv/entries.js';
import { settledWithin } from '../../core/wait.js';
import { VIEW_CATCH_UP_MS } from '../../core/mailbox.js';
import type { KvLocks } from '../../sessions/locks.js';
import type { RangeTarget, ReadConsistency, ReadResult, Row, StateStore } from '../../state/types.js';
import type { BlockingLimits, BlockingQueries, Parked } from '../blocking.js';
import { parseBlockingParams, queryMetaHeaders } from '../blocking.js';
import type { BrandHeaders } from '../brand.js';
import type { Query } from '../query.js';
import { answerStoreRead, type StoreReadSpec } from '../store-read.js';
import { JSON_TYPE, jsonReply, type Header, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { AclRequirement, Route } from '../routes.js';

export interface KvDeps {
  readonly store: StateStore;
  readonly blocking: BlockingQueries;
  readonly brand: BrandHeaders;
  readonly limits: BlockingLimits;
  /** Read per request: a reload can change it. */
  readonly kvMaxValueSize: () => number;
  readonly random: () => number;
  readonly locks: KvLocks;
}

const readKey: AclRequirement = { resource: 'key', access: 'read', name: (req) => req.rest };
const writeKey: AclRequirement = { resource: 'key', access: 'write', name: (req) => req.rest };

export function kvRoutes(deps: KvDeps): Route[] {
  const { store, brand, locks } = deps;
  // An entry's lock is in the view while the cluster's KV is read through: an entry written with
  // its lock row waits (briefly) for the view to hold that write, so an acquire read back shows its Session.
  const reads = {
    read: async <V>(target: RangeTarget, consistency: ReadConsistency): Promise<ReadResult<V>> => {
      const result = await store.read<V>(target, consistency);
      let lockWrite = 0;
      for (const row of result.rows) {
        if ((row.value as StoredKv | null)?.LockWrite === true) lockWrite = Math.max(lockWrite, row.modifyIndex);
      }
      if (lockWrite > store.index) await settledWithin(store.reached(lockWrite), VIEW_CATCH_UP_MS);
      return result;
    },
    changedAfter: store.changedAfter.bind(store),
  };
  const entry = (row: Row<StoredKv>) => toEntryJson(row, locks.lockOf(row.key));
  const bool = (value: boolean, pretty: boolean): Reply => ({
    status: 200,
    body: pretty ? `${value}\n` : String(value),
    contentType: JSON_TYPE,
  });

  /** Lists are filtered silently by key:read, as Consul does, and say so in a header. */
  const readable = <V>(all: Row<V>[], identity: Identity, index: number): { rows: Row<V>[]; meta: Header[] } => {
    const meta = queryMetaHeaders(brand, index);
    const rows = all.filter((row) => identity.authorizer.allowed('key', 'read', row.key));
    if (rows.length < all.length) meta.push([brand.resultsFilteredByAcls, 'true']);
    return { rows, meta };
  };

  const get = (req: ApiRequest, identity: Identity): Reply | Parked | Promise<Reply> => {
    const query = req.query;
    const params = parseBlockingParams(query, deps.limits, deps.random);
    const consistency = consistencyOf(query);
    const answer = <V>(read: KvRead<V>): Promise<Reply> | Parked =>
      answerStoreRead<V>(deps.blocking, reads, req, params, { ...read, consistency });
    if (query.has('keys')) return answer(keysRead(req, identity));
    if (query.has('recurse')) return answer(listRead(req, identity));
    return answer(keyRead(req));
  };

  /** `?keys`: key names only, read without their values. */
  const keysRead = (req: ApiRequest, identity: Identity): KvRead<null> => {
    const query = req.query;
    const key = req.rest;
    const pretty = req.pretty;
    const separator = query.get('separator') ?? query.get('seperator') ?? '';
    return {
      // Keys only: the keys exist whatever their values hold, and a listing of large values costs
      // the agent and etcd its keys alone.
      target: { table: KV_TABLE, prefix: key, keysOnly: true, maxBytes: KV_LISTING_MAX_BYTES },
      shareKey: JSON.stringify(['kv-keys', key, separator, pretty, identity.accessorId]),
      render({ rows: all, index }) {
        const { rows, meta } = readable(all, identity, index);
        const keys = listKeys(rows, key, separator);
        if (keys.length === 0 && key !== '') return { status: 404, headers: meta };
        return jsonReply(keys, pretty, meta);
      },
    };
  };

  /** `?recurse`: every entry under the prefix, up to KV_LISTING_MAX_BYTES. */
  const listRead = (req: ApiRequest, identity: Identity): KvRead<StoredKv> => {
    const key = req.rest;
    const pretty = req.pretty;
    return {
      target: { table: KV_TABLE, prefix: key, maxBytes: KV_LISTING_MAX_BYTES },
      shareKey: JSON.stringify(['kv-list', key, pretty, identity.accessorId]),
      render({ rows: all, index }) {
        const { rows, meta } = readable(all, identity, index);
        if (rows.length === 0) return { status: 404, headers: meta };
        return jsonReply(rows.map(entry), pretty, meta);
      },
    };
  };

  /** One key, as JSON or `?raw`. */
  const keyRead = (req: ApiRequest): KvRead<StoredKv> => {
    const key = req.rest;
    const pretty = req.pretty;
    if (key === '') throw agentError('KV_MISSING_KEY');
    const raw = req.query.has('raw');
    return {
      target: { table: KV_TABLE, key },
      // The key:read check happened before parking, so every reader of the key sees the same.
      shareKey: JSON.stringify(['kv', key, pretty, raw]),
      render({ rows, index, unreadable }) {
        const meta = queryMetaHeaders(brand, index);
        const row = rows[0];
        if (row === undefined && unreadable?.includes(key) === true) throw agentError('KV_VALUE_UNREADABLE', { key });
        if (row === undefined) return { status: 404, headers: meta };
        if (raw) return rawReply(row.value, meta);
        return jsonReply([entry(row)], pretty, meta);
      },
    };
  };

  const put = async (req: ApiRequest): Promise<Reply> => {
    const key = req.rest;
    if (key === '') throw agentError('KV_MISSING_KEY');
    const query = req.query;
    rejectConflictingFlags(query, ['cas', 'acquire', 'release']);
    const flags = query.has('flags') ? parseUint64(query.get('flags') ?? '', 'KV_BAD_FLAGS') : 0n;
    const cas = query.has('cas') ? parseUint64(query.get('cas') ?? '', 'KV_BAD_CAS') : undefined;
    const value = storedKv(flags, req.body ?? Buffer.alloc(0));
    const acquire = query.get('acquire');
    if (acquire !== undefined) return bool(await locks.acquire(key, acquire, value), req.pretty);
    const release = query.get('release');
    if (release !== undefined) return bool(await locks.release(key, release, value), req.pretty);
    const result = await store.commit([
      cas === undefined
        ? { op: 'set', table: KV_TABLE, key, value }
        : { op: 'set', table: KV_TABLE, key, value, ifIndex: Number(cas) },
    ]);
    return bool(cas === undefined ? true : result.ok, req.pretty);
  };

  const del = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    const key = req.rest;
    const query = req.query;
    rejectConflictingFlags(query, ['recurse', 'cas']);
    if (query.has('recurse')) {
      // Write on the prefix and on every rule beneath it (docs/decisions.md#acl-rules).
      if (!identity.authorizer.keyWritePrefix(key)) throw permissionDenied(identity, 'key', 'write', key);
      await locks.deletePrefix(key);
      return bool(true, req.pretty);
    }
    if (key === '') throw agentError('KV_MISSING_KEY');
    if (!query.has('cas')) {
      await locks.deleteKey(key);
      return bool(true, req.pretty);
    }
    const cas = parseUint64(query.get('cas') ?? '', 'KV_BAD_CAS');
    // Consul answers true for a check-and-delete of a key that is already gone.
    if (!(await kvExists(store, key))) return bool(true, req.pretty);
    return bool(await locks.deleteKey(key, Number(cas)), req.pretty);
  };

  return [
    {
      path: '/v1/kv/',
      prefix: true,
      methods: {
        GET: { handler: get, acl: (req) => (req.query.has('recurse') || req.query.has('keys') ? 'resolved' : readKey) },
        PUT: { handler: put, acl: writeKey },
        DELETE: { handler: del, acl: (req) => (req.query.has('recurse') ? 'resolved' : writeKey) },
      },
      maxBodyBytes: deps.kvMaxValueSize,
      bodyTooLarge: (size, max) => agentError('KV_VALUE_TOO_LARGE', { size, max }),
    },
  ];
}

/** What a GET reads (a key, a listing, key names) and how its rows become the reply. */
type KvRead<V> = Omit<StoreReadSpec<V>, 'consistency'>;

async function kvExists(store: StateStore, key: string): Promise<boolean> {
  const read = await store.read({ table: KV_TABLE, key }, 'default');
  return read.rows.length > 0 || (read.unreadable?.length ?? 0) > 0;
}

/** Consul's read modes: `?stale` may be served by any etcd member, `?consistent` as the default. */
function consistencyOf(query: Query): ReadConsistency {
  if (query.has('stale')) return 'stale';
  return query.has('consistent') ? 'consistent' : 'default';
}

function rawReply(value: StoredKv, headers: readonly Header[]): Reply {
  const body = value.Value === null ? Buffer.alloc(0) : Buffer.from(value.Value, 'base64');
  return {
    status: 200,
    body,
    contentType: 'text/plain',
    headers: [...headers, ['X-Content-Type-Options', 'nosniff'], ['Content-Security-Policy', 'sandbox']],
  };
}

function rejectConflictingFlags(query: Query, flags: readonly string[]): void {
  if (flags.filter((flag) => query.has(flag)).length > 1) {
    throw agentError('KV_CONFLICTING_FLAGS', { query: query.encode() });
  }
}
