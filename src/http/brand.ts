// Header names that carry the product brand (docs/decisions.md D1): the agent emits one brand,
// chosen by `http_config.header_brand`, and accepts both spellings on requests.

export type Brand = 'Svc' | 'Consul';

/** Whether the state's leader is reachable; absent for a lone agent, which is its own leader. */
export interface LeaderContact {
  readonly knownLeader: boolean;
  /** Milliseconds since the last contact with the leader; 0 while connected. */
  readonly lastContactMs: number;
}

export interface BrandHeaders {
  readonly index: string;
  readonly knownLeader: string;
  readonly lastContact: string;
  readonly defaultAclPolicy: string;
  readonly translateAddresses: string;
  readonly resultsFilteredByAcls: string;
  readonly effectiveConsistency: string;
  /** Hash-based blocking on GET /v1/agent/service/:id. */
  readonly contentHash: string;
  /** Read by every reply that carries KnownLeader and LastContact. */
  readonly leader?: LeaderContact | undefined;
}

export function brandHeaders(brand: Brand, leader?: LeaderContact): BrandHeaders {
  const p = `X-${brand}-`;
  return Object.freeze({
    index: `${p}Index`,
    knownLeader: `${p}KnownLeader`,
    lastContact: `${p}LastContact`,
    defaultAclPolicy: `${p}Default-ACL-Policy`,
    translateAddresses: `${p}Translate-Addresses`,
    resultsFilteredByAcls: `${p}Results-Filtered-By-ACLs`,
    effectiveConsistency: `${p}Effective-Consistency`,
    contentHash: `${p}ContentHash`,
    leader,
  });
}
