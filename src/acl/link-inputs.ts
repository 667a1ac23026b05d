// What token and role writes share of a client's body, decoded: links and identities as sent (as
// in Go, an empty string means "not given"). Validated by tokens.ts and roles.ts.

/** A policy or role link as a client sends it: by ID, or by Name when the ID is empty. */
export interface LinkInput {
  readonly ID?: string | undefined;
  readonly Name?: string | undefined;
}

export interface ServiceIdentityInput {
  readonly ServiceName?: string | undefined;
  readonly Datacenters?: readonly string[] | undefined;
}

export interface NodeIdentityInput {
  readonly NodeName?: string | undefined;
  readonly Datacenter?: string | undefined;
}
