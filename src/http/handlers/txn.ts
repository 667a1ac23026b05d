// PUT /v1/txn, as Consul's agent serves it (agent/txn_endpoint.go): a JSON array of at most 128
// operations (its body at most 512 KiB), each `{"KV": {Verb, Key, Value, Flags, Index, Session}}`
// with the value base64; all or nothing. 200 `{"Results": [...], "Errors": null}`, or 409
// `{"Results": null, "Errors": [{OpIndex, What}]}` when any op failed (a key the token may not
// touch among them: "Permission denied"); a read-only transaction honours `?stale` and carries the
// index headers. docs/decisions.md#txn.
import type { Identity } from '../../acl/identity.js';
import { agentError } from '../../core/errors.js';
import { storedKv } from '../../kv/entries.js';
import { isReadOnly, type KvTxn, type KvTxnOp, type TxnError } from '../../txn/kv-txn.js';
import { queryMetaHeaders } from '../blocking.js';
import type { BrandHeaders } from '../brand.js';
import { jsonReply, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { Route } from '../routes.js';

/** Consul's maxTxnOps and txn_max_req_len default. */
export const TXN_MAX_OPS = 128;
export const TXN_MAX_BODY_BYTES = 512 * 1024;

export interface TxnDeps {
  readonly txn: KvTxn;
  readonly brand: BrandHeaders;
  /** Read per request: a reload can change it. */
  readonly kvMaxValueSize: () => number;
}

export function txnRoutes(deps: TxnDeps): Route[] {
  const run = async (req: ApiRequest, identity: Identity): Promise<Reply> => {
    const ops = decodeTxn(req.body, deps.kvMaxValueSize());
    const denied = ops.flatMap((op, at) =>
      permitted(identity, op) ? [] : [{ OpIndex: at, What: 'Permission denied' }],
    );
    const readOnly = isReadOnly(ops);
    const consistency = req.query.has('stale') ? 'stale' : 'consistent';
    const outcome = denied.length > 0 ? { errors: denied } : await deps.txn.run(ops, consistency);
    if ('errors' in outcome) return conflict(outcome.errors, req.pretty);
    const meta = readOnly ? queryMetaHeaders(deps.brand, outcome.index) : [];
    return jsonReply({ Results: outcome.results, Errors: null }, req.pretty, meta);
  };
  return [
    {
      path: '/v1/txn',
      prefix: false,
      methods: { PUT: { handler: run, acl: 'resolved' } },
      maxBodyBytes: () => TXN_MAX_BODY_BYTES,
      bodyTooLarge: (size, max) => agentError('TXN_BODY_TOO_LARGE', { size, max }),
    },
  ];
}

function conflict(errors: TxnError[], pretty: boolean): Reply {
  return { ...jsonReply({ Results: null, Errors: errors }, pretty), status: 409 };
}

/** Reads need key:read, writes key:write, a tree delete write on the prefix and on every rule beneath it. */
function permitted(identity: Identity, op: KvTxnOp): boolean {
  const authorizer = identity.authorizer;
  switch (op.verb) {
    case 'get':
    case 'get-tree':
    case 'check-index':
    case 'check-session':
    case 'check-not-exists':
      return authorizer.allowed('key', 'read', op.key);
    case 'delete-tree':
      return authorizer.keyWritePrefix(op.key);
    default:
      return authorizer.allowed('key', 'write', op.key);
  }
}

type Obj = Record<string, unknown>;

/** The field `name` of `o`, case-insensitively, as Go's decoder matches it. */
function field(o: Obj, name: string): unknown {
  if (name in o) return o[name];
  const lower = name.toLowerCase();
  for (const key of Object.keys(o)) if (key.toLowerCase() === lower) return o[key];
  return undefined;
}

const OP_KINDS = ['KV', 'Node', 'Service', 'Check', 'Session', 'Intention'];

function decodeTxn(body: Buffer | undefined, maxValue: number): KvTxnOp[] {
  const bad = (detail: string) => agentError('TXN_BODY_INVALID', { detail });
  let parsed: unknown;
  try {
    parsed = JSON.parse(body === undefined || body.length === 0 ? '' : body.toString('utf8'));
  } catch (err) {
    throw bad(body === undefined || body.length === 0 ? 'EOF' : (err as Error).message);
  }
  if (!Array.isArray(parsed)) throw bad('json: cannot unmarshal object into Go value of type api.TxnOps');
  if (parsed.length > TXN_MAX_OPS) throw agentError('TXN_TOO_MANY_OPS', { count: parsed.length, max: TXN_MAX_OPS });
  return parsed.map((item: unknown, at) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw bad(`operation ${at} is not an object`);
    const o = item as Obj;
    const kv = field(o, 'KV');
    if (kv === undefined || kv === null) {
      const kind = OP_KINDS.find((k) => field(o, k) !== undefined && field(o, k) !== null) ?? 'none';
      throw agentError('TXN_OP_UNSUPPORTED', { op: `${at} (${kind})`, kinds: 'KV' });
    }
    if (typeof kv !== 'object' || Array.isArray(kv)) throw bad(`operation ${at}: KV is not an object`);
    return kvOp(kv as Obj, at, maxValue, bad);
  });
}

function kvOp(o: Obj, at: number, maxValue: number, bad: (detail: string) => Error): KvTxnOp {
  const text = (name: string): string => {
    const v = field(o, name);
    if (v === undefined || v === null) return '';
    if (typeof v !== 'string') throw bad(`operation ${at}: KV.${name} is not a string`);
    return v;
  };
  const uint = (name: string): bigint => {
    const v = field(o, name);
    if (v === undefined || v === null) return 0n;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
      throw bad(`operation ${at}: KV.${name} is not a uint64`);
    return BigInt(v);
  };
  const key = text('Key');
  const encoded = text('Value');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || encoded.length % 4 === 1) {
    throw bad(`illegal base64 data in the value of operation ${at}`);
  }
  const value = Buffer.from(encoded, 'base64');
  if (value.length > maxValue) throw agentError('TXN_VALUE_TOO_LARGE', { key, size: value.length, max: maxValue });
  return {
    verb: text('Verb'),
    key,
    value: storedKv(uint('Flags'), value),
    index: Number(uint('Index')),
    session: text('Session'),
  };
}
