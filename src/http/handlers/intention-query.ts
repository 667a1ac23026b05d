// The intentions endpoints' parameters, parsed as Consul does (docs/decisions.md#intentions-api):
// service names (`name`, `ns/name`, `partition/ns/name`, `peer:…`), required query parameters,
// the default namespace, and what ?filter and the blocking reads look at.
import type { Identity } from '../../acl/identity.js';
import type { IndexedIntention } from '../../connect/intentions/index.js';
import type { StoredIntention } from '../../connect/intentions/model.js';
import { agentError } from '../../core/errors.js';
import { DEFAULT_NAMESPACE } from '../../core/namespace.js';
import type { Row } from '../../state/types.js';
import { requestNamespace } from '../namespace.js';
import type { ApiRequest } from '../request.js';

export interface ServiceRef {
  readonly namespace: string;
  readonly name: string;
}

export const FILTER_FIELDS: ReadonlySet<string> = new Set([
  'ID',
  'Description',
  'SourceNS',
  'SourceName',
  'DestinationNS',
  'DestinationName',
  'SourceType',
  'Action',
  'Permissions',
  'Meta',
  'Precedence',
  'CreateIndex',
  'ModifyIndex',
  'CreatedAt',
  'UpdatedAt',
]);
export const FILTER_MAPS: ReadonlySet<string> = new Set(['Meta']);

/** The default namespace of a name without one: `?ns`, the namespace header, the token's, `default`. */
export function defaultNamespace(req: ApiRequest, identity: Identity): string {
  return requestNamespace(req, identity.namespace, DEFAULT_NAMESPACE);
}

/**
 * `name`, `ns/name` or `partition/ns/name`; `peer:<p>/…` names a peered source, which
 * this agent never stores (partitions and peers are out of scope, docs/decisions.md D2).
 */
export function parseServiceName(input: string, fallbackNamespace: string, what: string): ServiceRef | 'peer' {
  const fail = (reason: string): Error => agentError('INTENTION_BAD_NAME', { what, input, reason });
  if (input.startsWith('peer:')) {
    if (!input.includes('/')) throw fail('need to specify the service name as well');
    return 'peer';
  }
  const parts = input.split('/');
  if (parts.length > 3) throw fail("input can contain at most two '/'");
  if (parts.length === 3) {
    const partition = parts.shift() as string;
    if (partition !== '' && partition !== 'default')
      throw fail(`partition ${JSON.stringify(partition)} is not supported`);
  }
  if (parts.length === 1) return { namespace: fallbackNamespace, name: parts[0] as string };
  return { namespace: parts[0] || fallbackNamespace, name: parts[1] as string };
}

export function requiredParam(req: ApiRequest, name: string): string {
  const value = req.head.rawQuery === '' ? undefined : req.query.get(name);
  if (!value) throw agentError('INTENTION_MISSING_PARAM', { name });
  return value;
}

export function noPeer(ref: ServiceRef | 'peer', what: string, input: string): ServiceRef {
  if (ref === 'peer') throw agentError('INTENTION_BAD_NAME', { what, input, reason: 'cannot specify a peer here' });
  return ref;
}

/** The partition query parameter: only the default partition exists. */
export function checkPartitionParam(req: ApiRequest): void {
  if (req.head.rawQuery === '') return;
  const partition = req.query.get('partition');
  if (partition && partition !== 'default') throw agentError('PARTITION_NOT_ON_ENDPOINT');
}

/** Reading one: intentions:read on its source or destination (docs/decisions.md#intention-acls). */
export function canRead(identity: Identity, x: StoredIntention): boolean {
  return (
    identity.authorizer.allowed('intention', 'read', x.DestinationName) ||
    identity.authorizer.allowed('intention', 'read', x.SourceName)
  );
}

export function filterView(row: Row<StoredIntention>): Record<string, unknown> {
  const x = row.value;
  return {
    ID: x.ID ?? '',
    Description: x.Description,
    SourceNS: x.SourceNS,
    SourceName: x.SourceName,
    DestinationNS: x.DestinationNS,
    DestinationName: x.DestinationName,
    SourceType: x.SourceType,
    Action: x.Action ?? '',
    Permissions: x.Permissions ?? [],
    Meta: x.Meta ?? {},
    Precedence: x.Precedence,
    CreateIndex: row.createIndex,
    ModifyIndex: row.modifyIndex,
    CreatedAt: x.CreatedAt ?? '',
    UpdatedAt: x.UpdatedAt ?? '',
  };
}

/** Whether ACLs hid any intention of the listed scope (the results-filtered header). */
export function aclHidden(all: readonly IndexedIntention[], scope: string, identity: Identity): boolean {
  return all.some((e) => (scope === '*' || e.row.value.DestinationNS === scope) && !canRead(identity, e.row.value));
}

/** Identifies an answer's content: its intentions and their versions. */
export function fingerprint(entries: readonly IndexedIntention[]): string {
  let out = '';
  for (const e of entries) out += `${e.key}@${e.row.modifyIndex};`;
  return out;
}
