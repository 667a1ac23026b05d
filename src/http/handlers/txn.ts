// PUT /v1/txn, as Consul's agent serves it (agent/txn_endpoint.go): a JSON array of at most 128
// operations (its body at most 512 KiB), each one of KV, Node, Service, Check or Session (txn-body.ts);
// all or nothing. 200 `{"Results": [...], "Errors": null}`, or 409 `{"Results": null, "Errors":
// [{OpIndex, What}]}` when any op failed (one the token may not make among them: "Permission
// denied"); a result the token may not read is left out. A read-only transaction honours `?stale`
// and carries the index headers. docs/decisions.md#txn.
import type { Identity } from '../../acl/identity.js';
import { agentError } from '../../core/errors.js';
import type { KvTxn } from '../../txn/kv-txn.js';
import { isReadOnly, type TxnError } from '../../txn/ops.js';
import { queryMetaHeaders } from '../blocking.js';
import type { BrandHeaders } from '../brand.js';
import { jsonReply, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { Route } from '../routes.js';
import { decodeTxn } from './txn-body.js';

/** Consul's txn_max_req_len default. */
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
    const readOnly = isReadOnly(ops);
    const consistency = req.query.has('stale') ? 'stale' : 'consistent';
    const outcome = await deps.txn.run(ops, consistency, identity.authorizer);
    if ('errors' in outcome) return conflict(outcome.errors, req.pretty);
    const meta = readOnly ? queryMetaHeaders(deps.brand, outcome.index) : [];
    if (readOnly && outcome.filtered) meta.push([deps.brand.resultsFilteredByAcls, 'true']);
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
