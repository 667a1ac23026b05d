// The size limits of the catalog's rows (docs/decisions.md#size-limits): a node, a service and a
// check as a write stores them, whichever way it came (PUT /v1/catalog/register, a client agent's
// sync through a server, this agent's anti-entropy). Consul's catalog endpoint bounds none of these
// fields; the Meta limits are the numbers of Consul's structs (its agent endpoint applies them), the
// rest are ours. Every refusal is a 413 naming the field (`Service.Tags[3]`, `Checks[0].Notes`).
import { limitBytes, limitEntries, limitJson, limitStringMap, limitStrings } from '../core/size-limits.js';
import type { StoredCheck, StoredService } from './model.js';

/** A service or a check as a write gives it (register.ts's ServiceInput, CheckInput): absent fields are not checked. */
type Given<T> = { readonly [K in keyof T]?: T[K] | undefined };

/** Node, service and check IDs and names, Kind, Mode, Type and durations: 4x a DNS name. */
export const NAME_MAX = 256;
/** An address or a host name (DNS names are at most 253 bytes). */
export const ADDRESS_MAX = 256;
/** Consul's structs: metaMaxKeyPairs, metaKeyMaxLength, metaValueMaxLength. */
export const META = { pairs: 64, key: 128, value: 512 } as const;
/** TaggedAddresses: Consul's agents set up to eight well-known tags; the rest is room for an operator's own. */
export const TAGGED_ADDRESSES = { pairs: 64, key: 128, value: ADDRESS_MAX } as const;
/** A service's Tags (a router's routing rules included) and each tag. */
export const TAGS_MAX = 128;
export const TAG_MAX = 256;
/** A service's Proxy as JSON: its Config and its Upstreams (a few hundred) with theirs. */
export const PROXY_MAX_JSON = 64 * 1024;
/** A check's CheckID and Name: the agent's own are a service's ID or name with up to 30 bytes added. */
export const CHECK_NAME_MAX = 512;
/** A check's Notes (a maintenance reason is one). */
export const NOTES_MAX = 1024;
/**
 * A check's Output: an agent keeps Consul's check_output_max_size (4 KiB) of a probe's output, and
 * Consul frames a cut output in text of its own (`… (captured 4096 of N bytes)`, `TTL expired …`).
 */
export const OUTPUT_MAX = 8 * 1024;
/** A check's Definition as JSON: its HTTP, TCP and GRPC targets and durations. */
export const DEFINITION_MAX_JSON = 4 * 1024;

/** Where a service's fields are named: `Service.` in a catalog registration, the agent's own names for its API. */
export interface ServiceLabels {
  readonly at: string;
  /** The field of the service's name: `Service` in the catalog, `Name` in an agent registration. */
  readonly name: string;
}

const CATALOG_SERVICE: ServiceLabels = { at: 'Service.', name: 'Service' };

export interface NodeFieldsInput {
  readonly ID: string;
  readonly Node: string;
  readonly Address: string;
  readonly TaggedAddresses: Readonly<Record<string, string>>;
  readonly NodeMeta: Readonly<Record<string, string>>;
}

export function limitNode(node: NodeFieldsInput): void {
  limitBytes('Node', node.Node, NAME_MAX);
  limitBytes('ID', node.ID, NAME_MAX);
  limitBytes('Address', node.Address, ADDRESS_MAX);
  limitStringMap('TaggedAddresses', node.TaggedAddresses, TAGGED_ADDRESSES);
  limitStringMap('NodeMeta', node.NodeMeta, META);
}

export function limitService(s: Given<StoredService>, labels: ServiceLabels = CATALOG_SERVICE): void {
  const at = labels.at;
  limitBytes(`${at}${labels.name}`, s.Service, NAME_MAX);
  limitBytes(`${at}ID`, s.ID, NAME_MAX);
  limitBytes(`${at}Kind`, s.Kind, NAME_MAX);
  limitStrings(`${at}Tags`, s.Tags, TAGS_MAX, TAG_MAX);
  limitBytes(`${at}Address`, s.Address, ADDRESS_MAX);
  const tagged = s.TaggedAddresses;
  if (tagged !== undefined) {
    const keys = Object.keys(tagged);
    limitEntries(`${at}TaggedAddresses`, keys.length, TAGGED_ADDRESSES.pairs);
    for (const key of keys) {
      limitBytes(`${at}TaggedAddresses key`, key, TAGGED_ADDRESSES.key);
      limitBytes(`${at}TaggedAddresses[${JSON.stringify(key)}].Address`, tagged[key]?.Address, ADDRESS_MAX);
    }
  }
  limitStringMap(`${at}Meta`, s.Meta, META);
  if (s.Proxy !== undefined && Object.keys(s.Proxy).length > 0) limitJson(`${at}Proxy`, s.Proxy, PROXY_MAX_JSON);
}

/** A check's fields; `at` names it (`Checks[2].`). Its service's name and tags are the service's, bounded there. */
export function limitCheck(c: Given<StoredCheck>, at: string): void {
  limitBytes(`${at}CheckID`, c.CheckID, CHECK_NAME_MAX);
  limitBytes(`${at}Name`, c.Name, CHECK_NAME_MAX);
  limitBytes(`${at}Notes`, c.Notes, NOTES_MAX);
  limitBytes(`${at}Output`, c.Output, OUTPUT_MAX);
  limitBytes(`${at}ServiceID`, c.ServiceID, NAME_MAX);
  limitBytes(`${at}Type`, c.Type, NAME_MAX);
  limitBytes(`${at}Interval`, c.Interval, NAME_MAX);
  limitBytes(`${at}Timeout`, c.Timeout, NAME_MAX);
  if (c.Definition !== undefined && Object.keys(c.Definition).length > 0)
    limitJson(`${at}Definition`, c.Definition, DEFINITION_MAX_JSON);
}
