// Every error code the agent raises, declared once: its kind (the HTTP layer maps a kind to a
// status, src/http/reply.ts) and its message template. Messages are Consul's texts where clients
// match on them, byte for byte. `{name}` inserts a parameter, `{name:q}` inserts it quoted as
// JSON.stringify does (Go's %q for these values). docs/errors.md is generated from this file.

export type ErrorKind =
  | 'invalid' // 400: the request is malformed or breaks a rule
  | 'unauthorized' // 401: ACL support disabled
  | 'permission-denied' // 403: token lacks a permission, or token unknown
  | 'not-found' // 404
  | 'method-not-allowed' // 405
  | 'conflict' // 409
  | 'length-required' // 411: a body without Content-Length where one is needed
  | 'too-large' // 413
  | 'unsupported' // 415: Consul's status for a metrics format that is switched off
  | 'rate-limited' // 429
  | 'not-implemented' // 501: a request framing the agent does not decode; joining a cluster by address
  | 'unavailable' // 503: a backend cannot answer right now
  | 'internal'; // 500: a real fault of ours

export interface ErrorSpec {
  readonly kind: ErrorKind;
  readonly message: string;
  /** For operators (docs/errors.md): when it happens and what to do, if the message does not say. */
  readonly note?: string;
  /** The component that raises it logs the cause once; the HTTP layer does not log every request it fails. */
  readonly logged?: true;
}

export const ERROR_CATALOGUE = {
  // Requests: bodies, query parameters, features this agent does not serve.
  BODY_DECODE: {
    kind: 'invalid',
    message: '{prefix}: {detail}',
    note: "A request body Go's decoder would refuse, in its words.",
  },
  INVALID_WAIT: { kind: 'invalid', message: 'Invalid wait time' },
  INVALID_INDEX: { kind: 'invalid', message: 'Invalid index' },
  FILTER_INVALID: { kind: 'invalid', message: 'Failed to create boolean expression evaluator: {detail}' },
  PARTITION_UNSUPPORTED: {
    kind: 'invalid',
    message: 'Invalid query parameter: "partition" - Partitions are a Consul Enterprise feature',
  },
  PARTITION_NOT_ON_ENDPOINT: { kind: 'invalid', message: 'Cannot use a partition with this endpoint' },
  DC_NO_PATH: {
    kind: 'internal',
    message: 'No path to datacenter',
    note: "?dc= naming another datacenter than the agent's: an agent serves its own only (docs/decisions.md#datacenters).",
  },
  PEERING_UNSUPPORTED: {
    kind: 'invalid',
    message: 'peering must be enabled to use this endpoint',
    note: '?peer= naming a peer: this agent has no cluster peering (docs/decisions.md#datacenters).',
  },
  MEMBERS_SEGMENT: { kind: 'invalid', message: 'Cannot provide a segment with wan=true' },
  CONNECT_DISABLED: { kind: 'invalid', message: 'Connect must be enabled in order to use this endpoint' },
  HTTP_NOT_API_PATH: {
    kind: 'not-found',
    message: "Invalid URL path: if attempting to use the HTTP API, ensure the path starts with '/v1/'\n",
  },
  HTTP_UNKNOWN_ENDPOINT: { kind: 'not-found', message: 'Invalid URL path: not a recognized HTTP API endpoint\n' },
  HTTP_METHOD_NOT_ALLOWED: {
    kind: 'method-not-allowed',
    message: 'method {method} not allowed',
    note: 'The reply names the methods the path serves in its Allow header.',
  },
  HTTP_BODY_TOO_LARGE: {
    kind: 'too-large',
    message: 'Request body({size} bytes) too large, max size: {max} bytes.',
    note: 'Over limits.http_max_body_bytes.',
  },
  HTTP_BAD_PATH_ESCAPE: { kind: 'invalid', message: 'Invalid URL path: malformed percent-encoding' },
  HTTP_DUPLICATE_HOST: {
    kind: 'invalid',
    message: 'Bad request: more than one Host header (RFC 9112 section 3.2)\n',
    note: 'node:http; uWS answers this itself. The connection is closed.',
  },
  HTTP_METHOD_UNKNOWN: {
    kind: 'not-implemented',
    message: 'Method not implemented: methods are case-sensitive (RFC 9110 section 9.1)\n',
    note: 'uWS listener: a method llhttp does not parse (lowercase included). The connection is closed.',
  },
  HTTP_LENGTH_REQUIRED: {
    kind: 'length-required',
    message:
      'Length required: this listener takes request bodies with Content-Length only (README, "HTTP transports")\n',
    note: 'uWS listener: a chunked request body (docs/decisions.md D18). The connection is closed.',
  },
  HTTP_MISSING_HOST: {
    kind: 'invalid',
    message: 'Bad request: missing required Host header\n',
    note: 'An HTTP/1.1 request without a Host header; the connection is closed.',
  },
  FRAMING_CONTENT_LENGTHS: {
    kind: 'invalid',
    message: 'Bad request framing: more than one Content-Length header\n',
    note: 'The connection is closed (request smuggling guard, docs/decisions.md D18).',
  },
  FRAMING_BAD_CONTENT_LENGTH: {
    kind: 'invalid',
    message: 'Bad request framing: invalid Content-Length {value:q}\n',
    note: 'The connection is closed.',
  },
  FRAMING_BOTH_LENGTHS: {
    kind: 'invalid',
    message: 'Bad request framing: both Content-Length and Transfer-Encoding\n',
    note: 'The connection is closed.',
  },
  FRAMING_BAD_TRANSFER_ENCODING: {
    kind: 'invalid',
    message: 'Bad request framing: Transfer-Encoding {value:q} must end in chunked, applied once\n',
    note: 'The connection is closed.',
  },
  FRAMING_TRANSFER_ENCODING_UNSUPPORTED: {
    kind: 'not-implemented',
    message: 'Transfer-Encoding {value:q} is not supported: send the body with chunked alone\n',
    note: 'The connection is closed.',
  },
  METRICS_PROMETHEUS_DISABLED: {
    kind: 'unsupported',
    message: 'Prometheus is not enabled since its retention time is not positive',
    note: 'GET /v1/agent/metrics?format=prometheus while telemetry.prometheus_retention_time is 0s.',
  },
  // Membership and the agent's log (docs/decisions.md#departed-members).
  AGENT_FORCE_LEAVE_UNKNOWN: {
    kind: 'not-found',
    message: "agent: No node found with name '{node}'",
    note: 'PUT /v1/agent/force-leave/<node> naming no member, live or departed, and no agent node in the catalog (Consul answers 500).',
  },
  AGENT_JOIN_CLUSTER: {
    kind: 'not-implemented',
    logged: true,
    message:
      "Failed to join {address}: no member of this cluster has that address, and svc-agent agents join a cluster through etcd, not by address: an agent started with the cluster's cluster.etcd.endpoints (-etcd) is a member",
    note: 'PUT /v1/agent/join/<address> naming no member: joining another cluster or agent by address is not offered (docs/decisions.md#departed-members). An address of a member answers 200: the agents share one cluster already.',
  },
  AGENT_JOIN_ALONE: {
    kind: 'not-implemented',
    logged: true,
    message:
      'Failed to join {address}: this agent runs alone (no cluster.etcd.endpoints); svc-agent agents share a cluster through etcd: start each with the same cluster.etcd.endpoints (-etcd)',
    note: 'PUT /v1/agent/join/<address> on an agent without etcd, naming another address than its own.',
  },
  AGENT_MONITOR_LOG_LEVEL: { kind: 'invalid', message: 'Unknown log level: {level}' },
  INTERNAL_UNEXPECTED: {
    kind: 'internal',
    logged: true,
    message: '{detail}',
    note: "A fault the code did not foresee: the thrown error's own message. Logged with its stack; please report it.",
  },

  // Size limits of what a write stores (docs/decisions.md#size-limits), where Consul has none.
  LIMIT_BYTES: {
    kind: 'too-large',
    message: '{field} is {size} bytes, over the limit of {max} bytes',
    note: 'A field of a write over its size limit (docs/decisions.md#size-limits). A config file registration names its block.',
  },
  LIMIT_ENTRIES: {
    kind: 'too-large',
    message: '{field} has {count} entries, over the limit of {max}',
    note: 'A list or map of a write over its entry limit (docs/decisions.md#size-limits).',
  },
  LIMIT_JSON: {
    kind: 'too-large',
    message: '{field} is {size} bytes as JSON, over the limit of {max} bytes',
    note: 'A free-form field (a proxy, a check definition, L7 permissions, a CA config) over its limit (docs/decisions.md#size-limits).',
  },

  // KV.
  KV_MISSING_KEY: { kind: 'invalid', message: 'Missing key name' },
  KV_BAD_FLAGS: { kind: 'invalid', message: 'strconv.ParseUint: parsing {text:q}: {reason}' },
  KV_BAD_CAS: { kind: 'invalid', message: 'strconv.ParseUint: parsing {text:q}: {reason}' },
  KV_CONFLICTING_FLAGS: { kind: 'invalid', message: 'Conflicting flags: {query}\n' },
  KV_VALUE_TOO_LARGE: {
    kind: 'too-large',
    message:
      'Request body({size} bytes) too large, max size: {max} bytes. See https://developer.hashicorp.com/docs/agent/config/config-files#kv_max_value_size.',
    note: 'Over limits.kv_max_value_size.',
  },
  EVENT_NAME_MISSING: { kind: 'invalid', message: 'Missing name' },
  EVENT_INVALID: {
    kind: 'invalid',
    message: '{detail}',
    note: "A user event's filters as Consul checks them: a tag filter needs a service filter; each must be a valid regular expression.",
  },
  EVENT_TOO_LARGE: {
    kind: 'too-large',
    message: 'user event exceeds configured limit of {max} bytes before encoding (this one is {size})',
    note: "Consul's gossip limit on a user event (its name, payload, filters and ID together): 512 bytes.",
  },
  KV_INVALID_SESSION: {
    kind: 'invalid',
    message: 'Invalid session {session:q}',
    note: '`?acquire` names a session that does not exist (never made, destroyed, or its TTL lapsed): create one first.',
  },

  // Transactions (docs/decisions.md#txn): Consul's texts.
  TXN_BODY_INVALID: { kind: 'invalid', message: 'Failed to parse body: {detail}' },
  TXN_TOO_MANY_OPS: {
    kind: 'too-large',
    message: 'Transaction contains too many operations ({count} > {max})',
  },
  TXN_BODY_TOO_LARGE: {
    kind: 'too-large',
    message:
      'Request body({size} bytes) too large, max size: {max} bytes. See https://developer.hashicorp.com/docs/agent/config/config-files#txn_max_req_len.',
  },
  TXN_VALUE_TOO_LARGE: {
    kind: 'too-large',
    message: 'Value for key {key:q} is too large ({size} > {max} bytes)',
  },
  TXN_OP_UNSUPPORTED: {
    kind: 'invalid',
    message: 'Transaction operation {op} is not supported: {kinds} operations are',
    note: "An op of none of the served kinds (an Intention op, which Consul's agent does not serve either, or an empty one) is refused whole.",
  },
  TXN_CONFLICT: {
    kind: 'conflict',
    message: 'The transaction met a concurrent write {tries} times in a row; nothing was applied: send it again',
  },

  // Sessions (docs/decisions.md#sessions). Consul answers these with 500; they are the caller's to fix.
  SESSION_MISSING: { kind: 'invalid', message: 'Missing session' },
  SESSION_NODE_NAME_MISSING: { kind: 'invalid', message: 'Missing node name' },
  SESSION_INVALID: {
    kind: 'invalid',
    message: '{detail}',
    note: "A session create Consul's Session.Apply refuses: Behavior release or delete, a TTL between 10s and 24h (or none).",
  },
  SESSION_NODE_MISSING: {
    kind: 'invalid',
    message: 'Missing node registration',
    note: "A session's node must be in the catalog (by default it is this agent's own).",
  },
  SESSION_CHECK_MISSING: {
    kind: 'invalid',
    message: "Missing check '{check}' registration",
    note: "Each of a session's checks must be registered on its node (the default one is the node's serfHealth).",
  },
  SESSION_CHECK_CRITICAL: {
    kind: 'invalid',
    message: "Check '{check}' is in {status} state",
    note: 'A session cannot start on a critical check: it would end at once.',
  },
  SESSION_NOT_FOUND: { kind: 'not-found', message: "Session id '{id}' not found" },
  KV_VALUE_UNREADABLE: {
    kind: 'internal',
    message: 'value of key {key:q} is unreadable: it is not a KV entry',
    note: 'Cluster: something other than an agent wrote the key in etcd; the agent log names it. Listings leave it out (`?keys` lists it); writing the key again repairs it.',
  },

  // ACLs. Clients match on "ACL not found" and "Permission denied".
  ACL_DISABLED: { kind: 'unauthorized', message: 'ACL support disabled' },
  ACL_NOT_FOUND: {
    kind: 'permission-denied',
    message: 'ACL not found',
    note: 'The request token is unknown or expired.',
  },
  ACL_NO_SERVER: {
    kind: 'unavailable',
    message: 'No server agent answered for token secrets: {detail}',
    note: 'In a cluster a token secret lives where only server agents read it: a client agent records a new one, and shows one, through a server.',
  },
  ACL_PERMISSION_DENIED: { kind: 'permission-denied', message: 'Permission denied: {reason}' },
  ACL_BOOTSTRAP_DONE: {
    kind: 'permission-denied',
    message: 'Permission denied: ACL bootstrap no longer allowed (reset index: {resetIndex})',
  },
  ACL_BAD_ESCAPE: { kind: 'invalid', message: 'invalid URL escape {escape:q}' },
  ACL_MISSING_ACCESSOR: { kind: 'invalid', message: 'Missing token AccessorID' },
  ACL_MISSING_POLICY_ID: { kind: 'invalid', message: 'Missing policy ID' },
  ACL_MISSING_POLICY_NAME: { kind: 'invalid', message: 'Missing policy Name' },
  ACL_TOKEN_FILTER_CONFLICT: {
    kind: 'invalid',
    message: 'can only filter by one of policy, role, serviceName, or authmethod at once',
  },
  ACL_TOKEN_ID_MISMATCH: { kind: 'invalid', message: 'Token Accessor ID in URL and payload do not match' },
  ACL_TOKEN_ACCESSOR_NOT_UUID: { kind: 'invalid', message: 'AccessorID is not a valid UUID' },
  ACL_TOKEN_ID_NOT_UUID: { kind: 'invalid', message: 'Invalid Token: {field} - not a valid UUID' },
  ACL_TOKEN_ID_RESERVED: {
    kind: 'invalid',
    message: 'Invalid Token: {field} - UUIDs with the prefix {prefix:q} are reserved',
  },
  ACL_TOKEN_SECRET_CHANGE: { kind: 'invalid', message: "Changing a token's SecretID is not permitted" },
  ACL_TOKEN_LOCAL_CHANGE: { kind: 'invalid', message: 'Cannot toggle local mode of {accessorId}' },
  ACL_TOKEN_AUTH_METHOD_CHANGE: { kind: 'invalid', message: 'Cannot change AuthMethod of {accessorId}' },
  ACL_TOKEN_EXPIRATION_CHANGE: { kind: 'invalid', message: 'Cannot change expiration time of {accessorId}' },
  ACL_TOKEN_NAMESPACE_CHANGE: { kind: 'invalid', message: 'Cannot change the namespace of {accessorId}' },
  ACL_TOKEN_AUTH_METHOD: { kind: 'invalid', message: 'AuthMethod field is disallowed outside of login' },
  ACL_TOKEN_TTL_NEGATIVE: { kind: 'invalid', message: "Token Expiration TTL '{ttl}' should be > 0" },
  ACL_TOKEN_TTL_AND_TIME: { kind: 'invalid', message: 'Token Expiration TTL and Expiration Time cannot both be set' },
  ACL_TOKEN_EXPIRES_BEFORE_CREATE: { kind: 'invalid', message: 'ExpirationTime cannot be before CreateTime' },
  ACL_TOKEN_EXPIRES_TOO_LATE: {
    kind: 'invalid',
    message: 'ExpirationTime cannot be more than {max} in the future (was {expiresIn})',
  },
  ACL_TOKEN_EXPIRES_TOO_SOON: {
    kind: 'invalid',
    message: 'ExpirationTime cannot be less than {min} in the future (was {expiresIn})',
  },
  ACL_TOKEN_NO_ROLE_ID: { kind: 'invalid', message: 'No such ACL role with ID {id:q}' },
  ACL_TOKEN_NO_ROLE_NAME: { kind: 'invalid', message: 'No such ACL role with name {name:q}' },
  ACL_TOKEN_NO_POLICY_ID: { kind: 'invalid', message: 'No such ACL policy with ID {id:q}' },
  ACL_TOKEN_NO_POLICY_NAME: { kind: 'invalid', message: 'No such ACL policy with name {name:q}' },
  ACL_TOKEN_SERVICE_IDENTITY_NO_NAME: {
    kind: 'invalid',
    message: 'Service identity is missing the service name field on this token',
  },
  ACL_TOKEN_SERVICE_IDENTITY_LOCAL_DCS: {
    kind: 'invalid',
    message: 'Service identity {name:q} cannot specify a list of datacenters on a local token',
  },
  ACL_TOKEN_SERVICE_IDENTITY_NAME: {
    kind: 'invalid',
    message:
      "Service identity {name:q} has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed",
  },
  ACL_TOKEN_NODE_IDENTITY_NO_NAME: {
    kind: 'invalid',
    message: 'Node identity is missing the node name field on this token',
  },
  ACL_TOKEN_NODE_IDENTITY_NO_DC: {
    kind: 'invalid',
    message: 'Node identity is missing the datacenter field on this token',
  },
  ACL_TOKEN_NODE_IDENTITY_NAME: {
    kind: 'invalid',
    message: "Node identity has an invalid name. Only lowercase alphanumeric characters, '-' and '_' are allowed",
  },
  ACL_TOKEN_DELETE_BAD_ID: { kind: 'invalid', message: 'Accessor ID is missing or an invalid UUID' },
  ACL_TOKEN_DELETE_ANONYMOUS: { kind: 'invalid', message: 'Delete operation not permitted on the anonymous token' },
  ACL_TOKEN_DELETE_SELF: { kind: 'invalid', message: "Deletion of the request's authorization token is not permitted" },
  NAMESPACE_INVALID: {
    kind: 'invalid',
    message:
      "Invalid Namespace {name:q}: a namespace name is 1 to 64 letters, digits or '-', starting and ending with a letter or digit",
  },
  ACL_TOKEN_NOT_FOUND: { kind: 'not-found', message: 'Cannot find token {accessorId:q}' },
  ACL_TOKEN_READ_NOT_FOUND: { kind: 'not-found', message: 'Requested token does not exist: ACL not found' },
  ACL_TOKEN_SELF_NOT_FOUND: { kind: 'not-found', message: 'Supplied token does not exist' },
  ACL_TOKEN_CLONE_NOT_FOUND: { kind: 'not-found', message: 'ACL not found' },
  ACL_TOKEN_DELETE_NOT_FOUND: { kind: 'not-found', message: 'Cannot find token to delete' },
  ACL_TOKEN_ID_IN_USE: { kind: 'conflict', message: 'Invalid Token: {field} is already in use' },
  ACL_TOKEN_LOST: { kind: 'internal', message: 'Failed to retrieve token after insertion' },
  ACL_SECRET_MISMATCH: {
    kind: 'permission-denied',
    message: "Permission denied: the secret does not match the token's",
    note: 'A server records a token secret only when it hashes to what the token row holds.',
  },
  ACL_POLICY_ID_SET: { kind: 'invalid', message: 'Cannot specify the ID when creating a new policy' },
  ACL_POLICY_ID_MISMATCH: { kind: 'invalid', message: 'Policy ID in URL and payload do not match' },
  ACL_POLICY_ID_NOT_UUID: { kind: 'invalid', message: 'Policy ID invalid UUID' },
  ACL_POLICY_NO_NAME: { kind: 'invalid', message: 'Invalid Policy: no Name is set' },
  ACL_POLICY_NAME_LENGTH: {
    kind: 'invalid',
    message: 'Invalid Policy: invalid Name. Length must be greater than 0 and less than {max}',
  },
  ACL_POLICY_NAME_PREFIX: {
    kind: 'invalid',
    message: "Invalid Policy: invalid Name. Names cannot be prefixed with '/' or '{prefix}'",
  },
  ACL_POLICY_NAME_CHARS: {
    kind: 'invalid',
    message: "Invalid Policy: invalid Name. Only alphanumeric characters, a single '/', '-' and '_' are allowed",
  },
  ACL_POLICY_BUILTIN_RULES: {
    kind: 'invalid',
    message: 'Changing the Rules for the builtin global-management policy is not permitted',
  },
  ACL_POLICY_BUILTIN_DATACENTERS: {
    kind: 'invalid',
    message: 'Changing the Datacenters of the builtin global-management policy is not permitted',
  },
  ACL_POLICY_BUILTIN_DELETE: {
    kind: 'invalid',
    message: 'Delete operation not permitted on the builtin global-management policy',
  },
  ACL_POLICY_NOT_FOUND: { kind: 'not-found', message: 'cannot find policy {id}' },
  ACL_POLICY_READ_NOT_FOUND: { kind: 'not-found', message: 'Requested policy does not exist: ACL not found' },
  ACL_POLICY_NAME_IN_USE: { kind: 'conflict', message: 'Invalid Policy: A Policy with Name {name:q} already exists' },
  ACL_POLICY_RENAME_IN_USE: { kind: 'conflict', message: 'Invalid Policy: A policy with name {name:q} already exists' },
  ACL_POLICY_LOST: { kind: 'internal', message: 'Failed to retrieve policy after insertion' },
  ACL_RULES_INVALID: { kind: 'invalid', message: 'Failed to parse ACL rules: {detail}' },
  ACL_RULES_BAD_POLICY: { kind: 'invalid', message: 'Invalid {rule} policy: {name:q} has invalid policy {policy:q}' },
  ACL_RULES_BAD_INTENTIONS: {
    kind: 'invalid',
    message: 'Invalid {rule} intentions policy: {name:q} has invalid intentions {intentions:q}',
  },
  ACL_RULES_BAD_LEVEL: { kind: 'invalid', message: 'Invalid {rule} policy: {policy:q}' },
  // Templated policies (docs/decisions.md#templated-policies); `owner` is token or role.
  ACL_TEMPLATED_NO_NAME: {
    kind: 'invalid',
    message: 'templated policy is missing the template name field on this {owner}',
  },
  ACL_TEMPLATED_LOCAL_DCS: {
    kind: 'invalid',
    message: 'templated policy {name:q} cannot specify a list of datacenters on a local token',
  },
  ACL_TEMPLATED_UNKNOWN: {
    kind: 'invalid',
    message: 'templated policy with an invalid templated name: {name} for this {owner}',
  },
  ACL_TEMPLATED_INVALID: {
    kind: 'invalid',
    message: 'encountered {owner} with invalid templated policy: {detail}',
    note: "The detail is the JSON-schema's (go-multierror's text) or the service or node name rule's.",
  },
  ACL_MISSING_TEMPLATED_NAME: { kind: 'invalid', message: 'Missing templated policy Name' },
  ACL_TEMPLATED_NAME_INVALID: { kind: 'invalid', message: 'Invalid templated policy Name: {name}' },
  ACL_TEMPLATED_PREVIEW_INVALID: {
    kind: 'invalid',
    message: 'validation error for templated policy: {name}: {detail}',
  },
  // Roles (docs/decisions.md#acl-roles).
  ACL_MISSING_ROLE_ID: { kind: 'invalid', message: 'Missing role ID' },
  ACL_MISSING_ROLE_NAME: { kind: 'invalid', message: 'Missing role Name' },
  ACL_ROLE_ID_MISMATCH: { kind: 'invalid', message: 'Role ID in URL and payload do not match' },
  ACL_ROLE_NO_NAME: { kind: 'invalid', message: 'Invalid Role: no Name is set' },
  ACL_ROLE_NAME_CHARS: {
    kind: 'invalid',
    message: "Invalid Role: invalid Name. Only alphanumeric characters, '-' and '_' are allowed",
  },
  ACL_ROLE_ID_NOT_UUID: { kind: 'invalid', message: 'Role ID invalid UUID' },
  ACL_ROLE_NO_POLICY_NAME: { kind: 'invalid', message: 'No such ACL policy with name {name:q}' },
  ACL_ROLE_NO_POLICY_ID: {
    kind: 'invalid',
    message: 'Failed to apply role upsert request: No such policy with ID: {id}',
    note: "Consul checks a link by ID when it commits the role (its state store's text).",
  },
  ACL_ROLE_SERVICE_IDENTITY_NO_NAME: {
    kind: 'invalid',
    message: 'Service identity is missing the service name field on this role',
  },
  ACL_ROLE_SERVICE_IDENTITY_NAME: {
    kind: 'invalid',
    message: "Service identity {name:q} has an invalid name. Only alphanumeric characters, '-' and '_' are allowed",
  },
  ACL_ROLE_NODE_IDENTITY_NO_NAME: {
    kind: 'invalid',
    message: 'Node identity is missing the node name field on this role',
  },
  ACL_ROLE_NODE_IDENTITY_NO_DC: {
    kind: 'invalid',
    message: 'Node identity is missing the datacenter field on this role',
  },
  ACL_ROLE_NODE_IDENTITY_NAME: {
    kind: 'invalid',
    message: "Node identity has an invalid name. Only alphanumeric characters, '-' and '_' are allowed",
  },
  ACL_ROLE_NOT_FOUND: { kind: 'not-found', message: 'cannot find role {id}' },
  ACL_ROLE_NAME_IN_USE: { kind: 'conflict', message: 'Invalid Role: A Role with Name {name:q} already exists' },
  ACL_ROLE_RENAME_IN_USE: { kind: 'conflict', message: 'Invalid Role: A role with name {name:q} already exists' },
  ACL_ROLE_LOST: { kind: 'internal', message: 'Failed to retrieve role after insertion' },
  AGENT_TOKEN_UNKNOWN: {
    kind: 'not-found',
    message: 'Token {name:q} is unknown',
    note: "PUT /v1/agent/token/<kind> naming none of Consul 1.17's kinds (docs/decisions.md#agent-token-kinds).",
  },
  ACL_WRITE_RACE: { kind: 'conflict', message: 'ACL state changed while the write was applied; retry the request' },

  // ACL auth methods, binding rules, login and logout (docs/decisions.md#auth-methods).
  ACL_AUTH_METHOD_INVALID: { kind: 'invalid', message: 'Invalid Auth Method: {detail}' },
  ACL_AUTH_METHOD_TYPE_IMMUTABLE: { kind: 'invalid', message: 'the Type field of an Auth Method is immutable' },
  ACL_AUTH_METHOD_TTL_TOO_LONG: { kind: 'invalid', message: 'MaxTokenTTL {ttl} cannot be more than {max}' },
  ACL_AUTH_METHOD_TTL_TOO_SHORT: { kind: 'invalid', message: 'MaxTokenTTL {ttl} cannot be less than {min}' },
  ACL_AUTH_METHOD_NAME_MISMATCH: { kind: 'invalid', message: 'AuthMethod Name in URL and payload do not match' },
  ACL_MISSING_AUTH_METHOD_NAME: { kind: 'invalid', message: 'Missing auth method name' },
  ACL_AUTH_METHOD_READ_NOT_FOUND: {
    kind: 'not-found',
    message: 'Requested auth method does not exist: ACL not found',
  },
  ACL_BINDING_RULE_INVALID: { kind: 'invalid', message: 'Invalid Binding Rule: {detail}' },
  ACL_BINDING_RULE_SELECTOR: { kind: 'invalid', message: 'invalid Binding Rule: Selector is invalid: {detail}' },
  ACL_BINDING_RULE_ID_NOT_UUID: { kind: 'invalid', message: 'Binding Rule ID invalid UUID' },
  ACL_BINDING_RULE_NOT_FOUND: { kind: 'not-found', message: 'cannot find binding rule {id}' },
  ACL_BINDING_RULE_METHOD_IMMUTABLE: {
    kind: 'invalid',
    message: 'the AuthMethod field of an Binding Rule is immutable',
  },
  ACL_BINDING_RULE_NO_METHOD: { kind: 'invalid', message: 'cannot find auth method with name {name:q}' },
  ACL_BINDING_RULE_ID_MISMATCH: { kind: 'invalid', message: 'BindingRule ID in URL and payload do not match' },
  ACL_MISSING_BINDING_RULE_ID: { kind: 'invalid', message: 'Missing binding rule ID' },
  ACL_BINDING_RULE_READ_NOT_FOUND: {
    kind: 'not-found',
    message: 'Requested binding rule does not exist: ACL not found',
  },
  ACL_LOGIN_NO_AUTH_METHOD: { kind: 'permission-denied', message: 'ACL not found: auth method {name:q} not found' },
  ACL_LOGIN_REFUSED: {
    kind: 'permission-denied',
    message: '{detail}',
    note: "A bearer token the auth method refused (signature, time claims, issuer, audience, algorithm, a claim it cannot map, a bound name that comes out invalid), in Consul's words; Consul answers these 500, this agent 403 (docs/decisions.md#auth-methods). No token is made.",
  },
  ACL_LOGIN_NO_BINDING: {
    kind: 'permission-denied',
    message: 'Permission denied',
    note: "No binding rule of the auth method matched the login's claims (or what matched names no role or policy): no token is made.",
  },
  ACL_LOGOUT_NO_TOKEN: { kind: 'unauthorized', message: 'Supplied token does not exist' },
  ACL_LOGOUT_NOT_LOGIN: {
    kind: 'permission-denied',
    message: 'Permission denied',
    note: 'POST /v1/acl/logout with a token that no login made.',
  },

  // Intentions.
  INTENTION_INVALID: {
    kind: 'invalid',
    message: '{problems}',
    note: "Every problem found (legacy API, in go-multierror's text) or the first one (/exact API).",
  },
  INTENTION_DESTINATION_FIXED: {
    kind: 'invalid',
    message: 'Cannot modify Destination partition/namespace/name for an intention once it exists.',
  },
  INTENTION_NOT_FOUND: { kind: 'not-found', message: "Cannot {action} non-existent intention: '{id}'" },
  INTENTION_READ_NOT_FOUND: { kind: 'not-found', message: 'Intention not found' },
  INTENTION_DUPLICATE: { kind: 'conflict', message: 'duplicate intention found: {intention}' },
  INTENTION_RACE: { kind: 'conflict', message: 'intention changed concurrently; retry the request' },
  INTENTION_ID_SET: { kind: 'invalid', message: 'ID must be empty when creating a new intention' },
  INTENTION_BAD_ID: { kind: 'invalid', message: 'failed intention lookup: index error: {reason}' },
  INTENTION_MISSING_PARAM: { kind: 'invalid', message: "required query parameter '{name}' not set" },
  INTENTION_MATCH_BY: { kind: 'invalid', message: "'by' parameter must be one of 'source' or 'destination'" },
  INTENTION_BAD_NAME: { kind: 'invalid', message: '{what} {input:q} is invalid: {reason}' },
  INTENTION_SOURCE_TYPE: { kind: 'invalid', message: 'unsupported SourceType: {sourceType:q}' },
  // Config entries (docs/decisions.md#config-entries).
  CONFIG_ENTRY_DECODE: {
    kind: 'invalid',
    message: 'Request decoding failed: {detail}',
    note: "A body Consul's config entry decoder refuses (no Kind, an unknown kind, a value of the wrong type, a key no field takes), in its words.",
  },
  CONFIG_ENTRY_KIND: { kind: 'invalid', message: 'invalid config entry kind: {kind}' },
  CONFIG_ENTRY_INVALID: {
    kind: 'invalid',
    message: '{problems}',
    note: "What the kind's Normalize or Validate refuses, in Consul's words (Consul answers 500; docs/decisions.md D3).",
  },
  CONFIG_ENTRY_NOT_FOUND: { kind: 'not-found', message: 'Config entry not found for {kind:q} / {name:q}' },
  CONFIG_ENTRY_DELETE_PATH: { kind: 'not-found', message: 'Must provide both a kind and name to delete' },
  CONFIG_ENTRY_CAS: {
    kind: 'invalid',
    message: 'strconv.ParseUint: parsing {value:q}: invalid syntax',
    note: '`?cas` is not an unsigned integer (Consul answers 500).',
  },
  CONFIG_ENTRY_RACE: {
    kind: 'conflict',
    message: 'config entry changed by another write while this one was applied; try again',
    note: 'A write without ?cas lost the race five times in a row to other writes of the same entry.',
  },

  // Catalog and health.
  CONSISTENCY_CONFLICT: { kind: 'invalid', message: 'Cannot specify ?stale with ?consistent, conflicting semantics.' },
  CATALOG_MISSING_NODE: { kind: 'invalid', message: 'Must provide node' },
  CATALOG_MISSING_ADDRESS: { kind: 'invalid', message: 'Must provide address if SkipNodeUpdate is not set' },
  CATALOG_MISSING_SERVICE_NAME: { kind: 'invalid', message: 'Must provide service name with ID {id:q}' },
  CATALOG_PROXY_DESTINATION: {
    kind: 'invalid',
    message: 'Proxy.DestinationServiceName must be non-empty for Connect proxy services',
  },
  CATALOG_PROXY_PORT: { kind: 'invalid', message: 'Port or SocketPath must be set for a Connect proxy' },
  CATALOG_CHECK_STATUS: { kind: 'invalid', message: 'Invalid check status {status:q}' },
  CATALOG_CHECK_NO_NODE: { kind: 'invalid', message: 'Missing node registration' },
  CATALOG_CHECK_NO_SERVICE: { kind: 'invalid', message: 'Missing service registration' },
  CATALOG_CHECK_NODE_MISMATCH: { kind: 'invalid', message: 'Check node {check:q} does not match node {node:q}' },
  CATALOG_UNKNOWN_DATACENTER: {
    kind: 'internal',
    message: 'No path to datacenter',
    note: "The request names a datacenter other than the agent's; svc-agent knows one datacenter.",
  },
  CATALOG_MISSING_SERVICE_PATH: { kind: 'invalid', message: 'Missing service name' },
  CATALOG_MISSING_NODE_PATH: { kind: 'invalid', message: 'Missing node name' },
  HEALTH_BAD_STATE: { kind: 'invalid', message: 'Bad check state' },
  HEALTH_BAD_PASSING: { kind: 'invalid', message: 'Invalid value for ?passing' },

  // Connect authorize.
  AUTHORIZE_NO_TARGET: { kind: 'invalid', message: 'Target service must be specified' },
  AUTHORIZE_BAD_URI: { kind: 'invalid', message: 'ClientCertURI not a valid Connect identifier' },
  AUTHORIZE_NOT_SERVICE: { kind: 'invalid', message: 'ClientCertURI not a valid Service identifier' },
  AUTHORIZE_PARTITION: { kind: 'invalid', message: 'Mismatched partitions: {partition:q} != "default"' },

  // Connect CA and leaf certificates.
  CA_BAD_PEM_PARAM: { kind: 'invalid', message: "The 'pem' query parameter must be a boolean value" },
  LEAF_MISSING_SERVICE: { kind: 'invalid', message: 'Missing service name' },
  CA_CONFIG_PARSE: { kind: 'invalid', message: "error parsing CA config: '{field}': {detail}" },
  CA_CONFIG_INVALID: { kind: 'invalid', message: 'error configuring provider: {detail}' },
  CA_UNKNOWN_PROVIDER: { kind: 'invalid', message: 'unknown CA provider {provider:q}' },
  CA_STATE_READ_ONLY: {
    kind: 'invalid',
    message: 'Provider State is read-only. It must be omitted or identical to the current value',
  },
  CA_CONFIG_CONFLICT: { kind: 'conflict', message: 'CA configuration changed concurrently; try again' },
  CA_NOT_INITIALIZED: { kind: 'internal', message: 'CA has not finished initializing' },
  CA_BAD_CERT: { kind: 'invalid', message: 'error parsing root cert: {detail}' },
  CA_BAD_KEY: {
    kind: 'invalid',
    message: '{detail}',
    note: 'A CA private key of an unsupported type or size, or one that does not parse.',
  },
  CA_KEY_MISMATCH: { kind: 'invalid', message: 'private key does not match the root certificate' },
  CA_BAD_CSR: {
    kind: 'invalid',
    message: '{detail}',
    note: 'A CSR that does not parse, is not signed by its key, or names another trust domain or datacenter.',
  },
  CA_ROOT_EXPIRED: {
    kind: 'internal',
    message: 'root expired: valid until {notAfter}',
    note: 'Rotate the CA (PUT /v1/connect/ca/configuration).',
  },
  CA_SIGNER_UNAVAILABLE: {
    kind: 'unavailable',
    message: '{detail}',
    note: 'The signing pool is closed (shutting down) or a signing thread failed.',
  },
  CSR_RATE_LIMITED: {
    kind: 'rate-limited',
    message: 'Rate limit reached, try again later',
    note: 'Leaf signing is over connect.ca_config csr_max_per_second; clients retry.',
  },
  CA_UNKNOWN: {
    kind: 'internal',
    message: 'CA {caId} is not prepared in this worker',
    note: 'Between the agent and its signing threads only: the task is resent with the CA.',
  },
  CA_SIGNER_NO_THREAD: {
    kind: 'unavailable',
    message: 'leaf signing unavailable: no signing thread could start ({detail}); try again later',
    note: 'Most often the process is out of open files (the limit in force is logged at start-up; raise LimitNOFILE). The agent retries the thread with a growing delay, logs the outage once, and cached leaves keep being served.',
    logged: true,
  },
  CA_SIGN_FAILED: { kind: 'internal', message: '{detail}' },
  CA_NO_SERVER: {
    kind: 'unavailable',
    message: 'No CA server answered the leaf signing request: {detail}',
    note: 'A client agent needs a server agent (and etcd) to sign a new leaf; cached leaves keep being served.',
  },
  CA_SERIAL_CONFLICT: {
    kind: 'unavailable',
    message: 'could not take a certificate serial: the counter kept changing',
    note: 'Every guarded commit on the serial counter lost to another server; the caller retries.',
  },
  CA_SERVER_ONLY: {
    kind: 'invalid',
    message: 'the CA configuration is changed on a server agent',
    note: 'A client agent holds no CA key, so it cannot initialise or rotate the CA.',
  },

  // State store.
  STORE_CLOSED: { kind: 'unavailable', message: 'state store is closed' },
  STATE_INVALID_OP: {
    kind: 'invalid',
    message: '{detail}',
    note: 'A commit the store refuses (embedders writing to the store directly).',
  },
  STATE_APPLY_FAILED: { kind: 'internal', message: 'applying the commit failed' },
  STATE_WAL_WRITE_FAILED: {
    kind: 'unavailable',
    message: 'state store write-ahead log failed; the store is read-only until restart',
    note: 'The disk refused a write for a reason other than space (read-only, failing): fix it and restart the agent. Logged once, when it happens.',
    logged: true,
  },
  STATE_DISK_FULL: {
    kind: 'unavailable',
    message: 'the disk holding {dir} is full; the state store is read-only until space is freed',
    note: 'Reads are served meanwhile; the agent checks every second and resumes writes by itself once there is room (logged once when it starts and once when it ends).',
    logged: true,
  },
  STATE_LOSS_DETECTED: {
    kind: 'internal',
    message:
      '{detail}; refusing to start rather than lose acknowledged writes silently. Restore the data directory from a backup, or start once with -accept-state-loss to continue from index {index}',
    note: 'At start-up: a WAL segment is missing or cut before the last acknowledged write (docs/decisions.md D17).',
  },
  STATE_SNAPSHOT_CORRUPT: {
    kind: 'internal',
    message: 'snapshot {path} is damaged ({why}); refusing to start without the acknowledged data it holds',
    note: 'At start-up. Restore the data directory from a backup.',
  },
  STATE_WAL_GAP: {
    kind: 'internal',
    message: '{detail}; refusing to start rather than drop acknowledged writes',
    note: 'At start-up: WAL records are missing. Restore the data directory from a backup.',
  },
  STATE_WAL_CORRUPT: {
    kind: 'internal',
    message: '{detail}; refusing to start rather than drop acknowledged writes',
    note: 'At start-up: a WAL record is damaged with acknowledged records after it. Restore the data directory from a backup.',
  },
  STATE_DIR_LOCKED: {
    kind: 'unavailable',
    message: 'state directory {dir} is in use by process {pid} (lock file {lockFile})',
    note: 'At start-up: another agent uses this data_dir.',
  },
  STATE_DIR_LOCK_FAILED: {
    kind: 'unavailable',
    message: 'cannot lock state directory {dir}',
    note: 'At start-up; the cause is logged.',
  },
  // logged: etcd going and coming back is logged once (per member, and by the store), not per request.
  STATE_NO_LEADER: {
    kind: 'unavailable',
    logged: true,
    message: 'No cluster leader',
    note: "Cluster: etcd could not take a write, and nothing of it was applied: no member could be reached, or etcd refused it (Consul's text; clients match on it).",
  },
  STATE_WRITE_OUTCOME_UNKNOWN: {
    kind: 'unavailable',
    logged: true,
    message:
      'The write may have been applied: it reached etcd (or a server agent), whose answer did not come back in time. Read it back, or compare its ModifyIndex, before writing it again',
    note: 'Cluster: the outcome is unknown, as etcd says of a request that timed out (docs/decisions.md#write-outcome-unknown); a `?cas=` write tried again may fail against its own first attempt.',
  },
  STATE_COMMIT_TOO_LARGE: {
    kind: 'too-large',
    message: 'commit needs {needed} etcd operations; one transaction holds at most {max} (etcd --max-txn-ops)',
    note: 'Cluster: one commit must fit one etcd transaction, so it is refused rather than split.',
  },
  STATE_REQUEST_TOO_LARGE: {
    kind: 'too-large',
    message: 'commit is larger than etcd accepts',
    note: 'Cluster: over etcd --max-request-bytes (1.5 MiB by default).',
  },
  STATE_LISTING_TOO_LARGE: {
    kind: 'too-large',
    message:
      'the listing holds more than {max} bytes (keys and values as stored), more than one answer carries; list a narrower prefix, or its keys alone with ?keys',
    note: "KV `?recurse` and `?keys`: the limit and its reason are in the README's KV paragraph (Cluster). Both stores count alike.",
  },
  STATE_ETCD_NO_SPACE: {
    kind: 'unavailable',
    logged: true,
    message:
      'etcd is out of space (its NOSPACE alarm is raised) and takes no writes until an operator compacts and defragments it and disarms the alarm',
    note: "Cluster: etcd's --quota-backend-bytes is spent; reads, authorize and cached leaves still answer. README, etcd's space quota.",
  },
  STATE_ETCD_FAILED: { kind: 'internal', message: 'etcd refused the request: {detail}' },
  CLUSTER_FORWARD_FAILED: {
    kind: 'internal',
    message: 'forwarding a write to a server agent failed: {detail}',
    note: 'Cluster: a client agent forwards its writes to a server (docs/decisions.md D25); the request or its answer was malformed.',
  },

  // Snapshots (docs/decisions.md#snapshots). Consul answers a bad archive with 500 and these words.
  SNAPSHOT_DECOMPRESS: {
    kind: 'internal',
    message: 'failed to decompress snapshot: {detail}',
    note: 'The archive is not gzip, or its compressed bytes are damaged or cut short. Nothing was changed.',
  },
  SNAPSHOT_UNREADABLE: {
    kind: 'internal',
    message: 'failed to read snapshot file: {detail}',
    note: 'The archive is damaged (its SHA-256 does not match), cut short, or holds a row its table does not accept. Nothing was changed.',
  },
  SNAPSHOT_FOREIGN: {
    kind: 'internal',
    message: 'failed to read snapshot file: not a svc-agent snapshot archive',
    note: 'A Consul snapshot (a raft snapshot in a gzipped tar) or any other file: svc-agent restores only its own archives. Nothing was changed.',
  },
  SNAPSHOT_VERSION: {
    kind: 'internal',
    message:
      'failed to read snapshot file: archive format version {version} is not supported (this agent reads version {supported})',
  },
  SNAPSHOT_DATACENTER_MISMATCH: {
    kind: 'internal',
    message: 'snapshot was taken in datacenter {archive:q}; this agent is in datacenter {agent:q}',
    note: "An archive is restored only into its own datacenter (its catalog, CA trust domain and tokens are that datacenter's). Nothing was changed.",
  },
  SNAPSHOT_BACKEND_MISMATCH: {
    kind: 'internal',
    message: 'snapshot was taken from the {archive} store; this agent keeps the {agent} store',
    note: "A lone agent's archive restores into a lone agent, a cluster's into a cluster (token secrets and CA keys are kept differently). Nothing was changed.",
  },
  SNAPSHOT_STALE_RESTORE: { kind: 'internal', message: 'stale not allowed for restore' },
  SNAPSHOT_SAVE_ON_CLIENT: {
    kind: 'invalid',
    message:
      'snapshot save runs on a server agent: a client agent cannot read the CA keys and token secrets an archive holds',
  },
  SNAPSHOT_BODY_TOO_LARGE: {
    kind: 'too-large',
    message: 'snapshot archive of {size} bytes is over the {max} bytes an agent takes',
  },
  SNAPSHOT_FORWARD_TOO_LARGE: {
    kind: 'too-large',
    message:
      "snapshot archive of {size} bytes is over the {max} bytes a client agent can forward to a server (etcd's request limit): restore it through a server agent",
  },
  SNAPSHOT_RESTORE_INCOMPLETE: {
    kind: 'internal',
    logged: true,
    message:
      'snapshot restore stopped after {done} of {total} etcd transactions: {detail}; readers keep the state before it and writes are refused until a restore completes: run the restore again',
    note: 'Cluster: an archive larger than one etcd transaction is restored in steps under a fence (docs/decisions.md#snapshots); running a restore again completes it.',
  },
  STATE_RESTORE_IN_PROGRESS: {
    kind: 'unavailable',
    message: 'snapshot restore in progress: {detail}',
    note: 'Cluster: a restore in steps is under way, or stopped part way and not yet run again (docs/decisions.md#snapshots): writes are refused, and a KV read whose state from before it etcd has compacted away.',
  },

  // Start-up and command line.
  TLS_FILES_INVALID: {
    kind: 'invalid',
    message: 'HTTPS: {detail}',
    note: 'At start-up or reload: a tls.defaults file is missing, unreadable, not PEM, or the key does not match the certificate. A reload keeps the certificate in use.',
  },
  CONFIG_INVALID: {
    kind: 'invalid',
    message: '{problems}',
    note: 'At start-up: one line per problem, each naming its file or dotted key.',
  },
  // Client commands (svc-agent kv get ...): printed on stderr as one line, exit status 1.
  CLI_FLAG_UNDEFINED: {
    kind: 'invalid',
    message: 'flag provided but not defined: -{flag}{suggestion}',
    note: 'A command given a flag it does not have, with the nearest it has (` (did you mean -datacenter?)`) when one is near; `-h` after the command lists its flags.',
  },
  CLI_EXTRA_ARGUMENTS: { kind: 'invalid', message: 'unexpected extra arguments: [{args}]' },
  CLI_UNKNOWN_COMMAND: { kind: 'invalid', message: 'unknown command: {command:q}\n\nCommands:\n{commands}' },
  CLI_FLAG_NEEDS_ARGUMENT: { kind: 'invalid', message: 'flag needs an argument: -{flag}' },
  CLI_FLAG_VALUE: { kind: 'invalid', message: 'invalid value {value:q} for flag -{flag}: {reason}' },
  CLI_FLAG_BOOL: {
    kind: 'invalid',
    message: 'invalid boolean value {value:q} for -{flag}: parse error',
    note: "Go's spellings: 1, t, T, true, TRUE, True and 0, f, F, false, FALSE, False.",
  },
  CLI_FLAG_MISSING: {
    kind: 'invalid',
    message: '{detail}',
    note: 'A client command run without a flag it needs, in Consul\'s words ("Must specify the -id parameter").',
  },
  CLI_FLAG_CONFLICT: {
    kind: 'invalid',
    message: '{detail}',
    note: 'Two flags that exclude each other (-allow and -deny, -cas and -recurse).',
  },
  CLI_FORMAT_UNKNOWN: { kind: 'invalid', message: 'Unknown format: {format}', note: '-format takes pretty or json.' },
  CLI_MISSING_ARGUMENT: { kind: 'invalid', message: 'Error! Missing {name} argument' },
  CLI_EMPTY_ARGUMENT: { kind: 'invalid', message: 'Error! Empty {name} argument' },
  CLI_TOO_MANY_ARGUMENTS: { kind: 'invalid', message: 'Too many arguments (expected {expected}, got {got})' },
  CLI_AGENT_TOKEN_ARGUMENTS: {
    kind: 'invalid',
    message: 'Error! {detail}',
    note: "`acl set-agent-token` takes TYPE and TOKEN, in Consul's words (its `MISSING TYPE argument` spelling included).",
  },
  CLI_AGENT_TOKEN_TYPE: {
    kind: 'invalid',
    message: 'Unknown token type',
    note: '`acl set-agent-token` TYPE: default, agent, recovery (or master), replication, config_file_service_registration.',
  },
  CLI_AGENT_TOKEN_FAILED: {
    kind: 'internal',
    message: 'Failed to set ACL token {type:q}: Unexpected response code: {status} ({body})',
    note: 'The agent refused the token: 401 with ACLs off, 403 for a token without agent:write on its node.',
  },
  CLI_ENV_INVALID: {
    kind: 'invalid',
    message: 'invalid boolean value {value:q} for {name}: parse error',
    note: 'CONSUL_HTTP_SSL or CONSUL_HTTP_SSL_VERIFY (or their SVC_ spellings) set to a value that is not a Go boolean.',
  },
  CLI_ADDRESS_SCHEME: {
    kind: 'invalid',
    message: 'Unknown protocol scheme: {scheme}',
    note: 'The agent address is host:port, http://host:port or https://host:port.',
  },
  CLI_FILE_UNREADABLE: {
    kind: 'invalid',
    message: '{what}: open {path}: {reason}',
    note: 'A file named by a flag, an environment variable or @file cannot be read: a token file, a CA file or directory, a client certificate or key, a value or import file.',
  },
  CLI_TLS_SETUP: {
    kind: 'invalid',
    message: '{detail}',
    note: 'The TLS files do not make a client: only one of -client-cert and -client-key, a file that holds no PEM, or a key that does not match the certificate. Nothing was sent.',
  },
  CLI_TLS_FAILED: {
    kind: 'unavailable',
    message: 'Error connecting to the agent at {address}: {reason}',
    note: "The TLS handshake failed, said in Go's words (x509: certificate signed by unknown authority; certificate is valid for ..., not ...; remote error: tls: certificate required) with what to give the command.",
  },
  CLI_CONNECT_FAILED: {
    kind: 'unavailable',
    message: 'Error connecting to the agent at {address}: {reason}',
    note: 'No connection to the agent: refused (is it running, on that port?), reset, or a name that does not resolve.',
  },
  CLI_SNAPSHOT: {
    kind: 'invalid',
    message: '{what}: {detail}',
    note: '`snapshot save|inspect`: the archive could not be written, or what was read back is not a whole archive (its own error says why).',
  },
  CLI_CONFIG_ENTRY_DECODE: {
    kind: 'invalid',
    message: 'Failed to decode config entry input: {detail}',
    note: '`config write`: the file (or standard input) is neither JSON nor HCL, or holds no object.',
  },
  CLI_UNEXPECTED_ANSWER: {
    kind: 'internal',
    message: 'Error {what}: Unexpected response code: {status} ({body})',
    note: "The agent answered with an error status; the body is the agent's message (403: the token may not do it).",
  },
  CLI_ANSWER_NOT_JSON: {
    kind: 'internal',
    message: 'Error {what}: the agent answered {status} with a body that is not JSON: {detail}',
    note: 'The address is not an agent, or a proxy answered in its place.',
  },
  CLI_IMPORT_NOT_JSON: {
    kind: 'invalid',
    message: 'Cannot unmarshal data: {detail}',
    note: '`kv import` takes what `kv export` writes: a JSON array of {"key", "flags", "value" (base64)} objects.',
  },
  CLI_IMPORT_BAD_BASE64: {
    kind: 'invalid',
    message: 'Error base 64 decoding value for key {key}: illegal base64 data at input byte {offset}',
  },
  CLI_LOADTEST_FLAG: {
    kind: 'invalid',
    message: '{detail}',
    note: '`svc-agent loadtest`: a flag out of range or of the wrong shape, or flags that exclude each other.',
  },
  CLI_LOADTEST_TARGET: {
    kind: 'invalid',
    message: '{detail}',
    note: '`svc-agent loadtest`: the target does not serve the endpoint, refuses the token, or did not reach the state the scenario waits for.',
  },
  CLI_LOADTEST_COMPARE: {
    kind: 'invalid',
    message: '{detail}',
    note: '`svc-agent loadtest compare`: a file that is not a result, or two unlike runs without -force.',
  },
  CLI_INTENTION_EXISTS: {
    kind: 'conflict',
    message: 'Error! Intention already exists for {source} => {destination} (use -replace to replace it)',
  },
  // Local services and checks (/v1/agent/service/*, /v1/agent/check/*, /v1/agent/health/*): Consul's texts.
  SERVICE_MISSING_NAME: { kind: 'invalid', message: 'Missing service name' },
  SERVICE_MISSING_ID: { kind: 'invalid', message: 'Missing service ID' },
  SERVICE_INVALID_ADDRESS: { kind: 'invalid', message: 'Invalid service address' },
  SERVICE_INVALID_WEIGHTS: { kind: 'invalid', message: 'Invalid Weights: {detail}' },
  SERVICE_INVALID_META: { kind: 'invalid', message: 'Invalid Service Meta: {detail}' },
  SERVICE_VALIDATION: {
    kind: 'invalid',
    message: 'Validation failed: {detail}',
    note: "The detail lists every rule the service breaks, as Go's multierror prints them.",
  },
  SERVICE_INVALID_FIELD: {
    kind: 'invalid',
    message: 'Request decode failed: {field} must be {expected}',
    note: 'A field of a service or check definition of the wrong JSON type (a config file names its file).',
  },
  SERVICE_SIDECAR_INVALID: { kind: 'invalid', message: 'Invalid SidecarService: {detail}' },
  SERVICE_SIDECAR_CHECK: { kind: 'invalid', message: 'Invalid check in sidecar_service: {detail}' },
  SERVICE_SIDECAR_PORT: {
    kind: 'invalid',
    message: 'no port provided for sidecar_service and none left in the configured range [{min}, {max}]',
  },
  SERVICE_CHECK_STATUS: { kind: 'invalid', message: "Status for checks must 'passing', 'warning', 'critical'" },
  SERVICE_UNKNOWN: {
    kind: 'not-found',
    message: 'Unknown service ID {id:q}. Ensure that the service ID is passed, not the service name.',
  },
  SERVICE_NOT_FOUND: { kind: 'not-found', message: 'unknown service ID: {id}' },
  SERVICE_MAINTENANCE_NO_ENABLE: { kind: 'invalid', message: 'Missing value for enable' },
  SERVICE_MAINTENANCE_BAD_ENABLE: { kind: 'invalid', message: 'Invalid value for enable: {value:q}' },
  SERVICE_MAINTENANCE_UNKNOWN: { kind: 'not-found', message: 'No service registered with ID {id:q}' },
  HEALTH_MISSING_SERVICE_ID: { kind: 'invalid', message: 'Missing serviceID' },
  HEALTH_MISSING_SERVICE_NAME: { kind: 'invalid', message: 'Missing service Name' },
  CHECK_MISSING_NAME: { kind: 'invalid', message: 'Missing check name' },
  CHECK_BAD_STATUS: { kind: 'invalid', message: 'Bad check status' },
  CHECK_INVALID: { kind: 'invalid', message: 'Invalid check: {detail}' },
  CHECK_UNSUPPORTED: {
    kind: 'invalid',
    message: 'Invalid check: svc-agent does not run {type} checks',
    note: 'Docker, UDP, H2PING and OS service checks; HTTP, TCP, gRPC, TTL and alias checks run.',
  },
  CHECK_SCRIPTS_DISABLED: {
    kind: 'invalid',
    message:
      'Scripts are disabled on this agent: svc-agent never runs script or docker checks, whatever enable_script_checks and enable_local_script_checks say',
    note: "A script or docker check. Consul's text begins the same; its advice to turn enable_script_checks on is left out, since svc-agent ignores that key.",
  },
  CHECK_SERVICE_UNKNOWN: { kind: 'not-found', message: 'ServiceID {id:q} does not exist' },
  CHECK_UNKNOWN: {
    kind: 'not-found',
    message: 'Unknown check ID {id:q}. Ensure that the check ID is passed, not the check name.',
  },
  CHECK_NOT_TTL: { kind: 'not-found', message: 'CheckID {id:q} does not have associated TTL' },
  CHECK_UPDATE_STATUS: { kind: 'invalid', message: "Invalid check status: '{status}'" },
  NODE_ID_CORRUPT: {
    kind: 'internal',
    message: '{file} does not hold a UUID: remove it or set node_id',
    note: 'At start-up.',
  },
  CONFIG_RELOAD_FAILED: {
    kind: 'internal',
    logged: true,
    message: 'Failed to reload configs: {detail}',
    note: 'PUT /v1/agent/reload or SIGHUP with a config that does not load; the running config stays.',
  },
  CONFIG_RELOAD_UNAVAILABLE: {
    kind: 'internal',
    message: 'Failed to reload configs: this agent was started without config files to re-read',
    note: 'An agent embedded as a library without a reloadConfig option.',
  },
  DIR_CREATE_FAILED: {
    kind: 'internal',
    message: 'cannot create directory {path}: {reason}',
    note: 'At start-up: the data directory (or a directory in it) cannot be made.',
  },
  HTTP_LISTEN: {
    kind: 'internal',
    message: 'error starting {api} listener: listen tcp {address}: bind: {reason}',
    note: 'At start-up: the address is taken (by another agent too: the port is bound exclusively), not permitted, or not on this host.',
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

type TemplateOf<C extends ErrorCode> = (typeof ERROR_CATALOGUE)[C]['message'];

/** The parameter names in a template: `'a {x} b {y:q}'` → `'x' | 'y'`. */
type PlaceholdersIn<T extends string> = T extends `${string}{${infer Body}}${infer Rest}`
  ? (Body extends `${infer Name}:q` ? Name : Body) | PlaceholdersIn<Rest>
  : never;

export type PlaceholderOf<C extends ErrorCode> = PlaceholdersIn<TemplateOf<C>>;

/** A value a template inserts. */
export type TemplateValue = string | number | bigint;

/** The codes whose template takes exactly the parameters `P` (e.g. every `{detail}`-only code). */
export type CodeTaking<P extends string> = {
  [C in ErrorCode]: [PlaceholderOf<C>] extends [P] ? ([P] extends [PlaceholderOf<C>] ? C : never) : never;
}[ErrorCode];
