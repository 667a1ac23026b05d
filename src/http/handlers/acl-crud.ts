// What the /v1/acl/* resources (tokens, policies, roles, auth methods, binding rules) read and
// delete alike: a blocking read with the index headers, a row by the path's ID or name (a 400
// when the path names none, before any token is looked at), a table's list, a delete by the
// path's ID, and the ACL rule that asks for nothing when the path names nothing. Each handler
// file keeps what its resource does differently (its texts, its index, its JSON).
import { agentError, type CodeTaking } from '../../core/errors.js';
import type { StateStore, WatchTarget } from '../../state/types.js';
import { parseBlockingParams, queryMetaHeaders, type BlockingLimits, type BlockingQueries } from '../blocking.js';
import type { BrandHeaders } from '../brand.js';
import { errorTextReply, jsonReply, type Header, type Reply } from '../reply.js';
import type { ApiRequest } from '../request.js';
import type { AclRequirement, Outcome, Permission } from '../routes.js';

export const ACL_READ: Permission = Object.freeze({ resource: 'acl', access: 'read' });
export const ACL_WRITE: Permission = Object.freeze({ resource: 'acl', access: 'write' });

/** A code whose message takes no parameters: a missing ID's 400, a missing row's text. */
type PlainCode = CodeTaking<never>;

/** Requests Consul answers before looking at the token (a missing ID or name) ask for nothing here either. */
export const unlessEmpty =
  (permission: Permission) =>
  (req: ApiRequest): AclRequirement =>
    req.rest === '' ? 'none' : permission;

/** A missing row as Consul's handler answers it: its error text (a 403 or 404 by the code's kind). */
export const notFound =
  (code: PlainCode) =>
  (meta: Header[]): Reply =>
    errorTextReply(agentError(code), meta);

/** One row read by a blocking query. */
export interface RowRead<R> {
  readonly table: string;
  /** The row's key: the read wakes on it alone and answers its index; without one, the table's. */
  readonly key?: string | undefined;
  /** An index that covers more than the row (JSON that names rows of other tables). */
  readonly index?: () => number;
  readonly find: () => R | undefined;
  readonly json: (row: R) => unknown;
  /** The answer when there is no row, with the index headers. */
  readonly absent: (meta: Header[]) => Reply;
}

export interface AclCrudDeps {
  readonly store: StateStore;
  readonly blocking: BlockingQueries;
  readonly brand: BrandHeaders;
  readonly limits: BlockingLimits;
  readonly random: () => number;
}

export function aclCrud(deps: AclCrudDeps) {
  const { store, brand } = deps;

  /** A blocking query over `target`, answered by `render` with the index headers. */
  const blockingRead = (
    req: ApiRequest,
    target: WatchTarget,
    index: () => number,
    render: (meta: Header[]) => Reply,
  ): Outcome =>
    deps.blocking.answer(req, parseBlockingParams(req.query, deps.limits, deps.random), {
      target,
      index,
      render: (at) => render(queryMetaHeaders(brand, at)),
    });

  const readRow = <R>(req: ApiRequest, read: RowRead<R>): Outcome => {
    const { table, key, find, json, absent } = read;
    const pretty = req.pretty;
    const target: WatchTarget = key === undefined ? { table } : { table, key };
    const index = read.index ?? (key === undefined ? () => store.tableIndex(table) : () => store.keyIndex(table, key));
    return blockingRead(req, target, index, (meta) => {
      const row = find();
      return row === undefined ? absent(meta) : jsonReply(json(row), pretty, meta);
    });
  };

  return {
    blockingRead,

    /** GET of the row the path names (an ID, or a name `read` decodes); `missing` when it names none. */
    readByRest:
      <R>(missing: PlainCode, read: (rest: string) => RowRead<R>) =>
      (req: ApiRequest): Outcome => {
        if (req.rest === '') throw agentError(missing);
        return readRow(req, read(req.rest));
      },

    /** GET of a table's rows as `rows` gives them, by the table's index unless `index` covers more. */
    list: (req: ApiRequest, table: string, rows: () => readonly unknown[], index?: () => number): Outcome => {
      const pretty = req.pretty;
      return blockingRead(req, { table }, index ?? (() => store.tableIndex(table)), (meta) =>
        jsonReply(rows(), pretty, meta),
      );
    },

    /** DELETE of the row the path's ID names: `true`, as Consul answers; `missing` when it names none. */
    deleteByRest:
      (missing: PlainCode, remove: (id: string) => Promise<unknown>) =>
      async (req: ApiRequest): Promise<Reply> => {
        if (req.rest === '') throw agentError(missing);
        await remove(req.rest);
        return jsonReply(true, req.pretty);
      },
  };
}
