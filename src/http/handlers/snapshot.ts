// /v1/snapshot, as Consul's agent serves it (agent/snapshot_endpoint.go; docs/decisions.md#snapshots):
// GET answers the archive of the whole state with X-Consul-Index set to the index it was taken at;
// PUT restores the archive in its body (200, no body). Both need acl:write (Consul's management-only
// snapshot rule). `?stale` is taken on GET and refused on PUT with Consul's text. On a client agent
// the PUT goes to a server through etcd's mailbox, so its body is capped at what one etcd request
// holds, and GET is refused: a client agent cannot read the CA keys and token secrets (clientSnapshotRoutes).
import type { Permission } from '../route-types.js';
import { agentError } from '../../core/errors.js';
import type { Snapshots } from '../../snapshot/snapshots.js';
import { queryMetaHeaders } from '../blocking.js';
import type { BrandHeaders } from '../brand.js';
import { EMPTY_OK, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { Route } from '../routes.js';

const MANAGEMENT: Permission = Object.freeze({ resource: 'acl', access: 'write' });

/** The largest archive an agent takes: 100,000 KV rows and 10,000 intentions make about 10 MB (bench/sizing/snapshot.ts). */
export const SNAPSHOT_MAX_BODY_BYTES = 256 * 1024 * 1024;
/**
 * The largest archive a client agent forwards: the write travels base64 (4/3) in one etcd request,
 * whose default limit (--max-request-bytes) is 1.5 MiB.
 */
export const SNAPSHOT_FORWARD_MAX_BYTES = 1024 * 1024;

/** What Go's http sniffs for a gzip body, as Consul's answer carries. */
const GZIP_TYPE = 'application/x-gzip';

export interface SnapshotRouteDeps {
  readonly snapshots: Snapshots;
  readonly brand: BrandHeaders;
}

export function snapshotRoutes(deps: SnapshotRouteDeps): Route[] {
  const save = async (): Promise<Reply> => {
    const saved = await deps.snapshots.save();
    return {
      status: 200,
      body: saved.archive,
      contentType: GZIP_TYPE,
      headers: queryMetaHeaders(deps.brand, saved.index),
    };
  };
  const restore = async (req: ApiRequest): Promise<Reply> => {
    if (req.query.has('stale')) throw agentError('SNAPSHOT_STALE_RESTORE');
    await deps.snapshots.restore(req.body ?? Buffer.alloc(0));
    return EMPTY_OK;
  };
  return [
    {
      path: '/v1/snapshot',
      prefix: false,
      methods: { GET: { handler: save, acl: MANAGEMENT }, PUT: { handler: restore, acl: MANAGEMENT } },
      maxBodyBytes: SNAPSHOT_MAX_BODY_BYTES,
      bodyTooLarge: (size, max) => agentError('SNAPSHOT_BODY_TOO_LARGE', { size, max }),
    },
  ];
}

/** The routes as a client agent serves them, from its forwarding ones: GET refused, PUT's body capped. */
export function clientSnapshotRoutes(forwarded: readonly Route[]): Route[] {
  return forwarded.map((route) => ({
    ...route,
    methods: {
      ...route.methods,
      GET: {
        acl: MANAGEMENT,
        handler: () => {
          throw agentError('SNAPSHOT_SAVE_ON_CLIENT');
        },
      },
    },
    maxBodyBytes: SNAPSHOT_FORWARD_MAX_BYTES,
    bodyTooLarge: (size, max) => agentError('SNAPSHOT_FORWARD_TOO_LARGE', { size, max }),
  }));
}
