// The body of PUT /v1/txn read as Consul's agent reads it (agent/txn_endpoint.go: api.TxnOps decoded,
// then convertOps): a JSON array of at most 128 ops, each one of KV (its value base64), Node, Service,
// Check or Session, with the fields Consul's conversion keeps. Field names match case-insensitively,
// null is the zero value, unknown fields are ignored; a wrong type is Go's error behind "Failed to
// parse body: " (400), a KV value over kv_max_value_size a 413 naming its key.
import type { CheckInput, ServiceInput } from '../../catalog/register.js';
import { formatDuration } from '../../core/duration.js';
import { agentError } from '../../core/errors.js';
import { storedKv } from '../../kv/entries.js';
import type { KvTxnOp, NodeTxnOp, TxnOp } from '../../txn/ops.js';
import { definedOnly, goField, GoFields } from '../go-fields.js';

/** Consul's maxTxnOps. */
export const TXN_MAX_OPS = 128;

type Obj = Readonly<Record<string, unknown>>;

const present = (value: unknown): boolean => value !== undefined && value !== null;

/** The op kinds in Consul's order of precedence (convertOps' switch); Intention is Consul's raft-only one. */
const OP_KINDS = ['KV', 'Node', 'Service', 'Check', 'Session', 'Intention'] as const;
const SERVED = 'KV, Node, Service, Check and Session';

export function decodeTxn(body: Buffer | undefined, maxValue: number): TxnOp[] {
  const g = new GoFields('Failed to parse body', 'TxnOp');
  const bad = (detail: string) => agentError('TXN_BODY_INVALID', { detail });
  let parsed: unknown;
  try {
    parsed = JSON.parse(body === undefined || body.length === 0 ? '' : body.toString('utf8'));
  } catch (err) {
    throw bad(body === undefined || body.length === 0 ? 'EOF' : (err as Error).message);
  }
  if (!Array.isArray(parsed)) throw bad('json: cannot unmarshal object into Go value of type api.TxnOps');
  if (parsed.length > TXN_MAX_OPS) throw agentError('TXN_TOO_MANY_OPS', { count: parsed.length, max: TXN_MAX_OPS });
  return parsed.map((item: unknown, at): TxnOp => {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) throw bad(`operation ${at} is not an object`);
    const o = item as Obj;
    const kind = OP_KINDS.find((k) => present(goField(o, k)));
    const value = kind === undefined ? undefined : goField(o, kind);
    if (kind === undefined || kind === 'Intention') {
      throw agentError('TXN_OP_UNSUPPORTED', { op: `${at} (${kind ?? 'none'})`, kinds: SERVED });
    }
    if (typeof value !== 'object' || Array.isArray(value)) throw g.typeError(value, kind, `api.${kind}TxnOp`);
    const op = value as Obj;
    const verb = g.string(goField(op, 'Verb'), `${kind}.Verb`) ?? '';
    switch (kind) {
      case 'KV':
        return kvOp(g, op, verb, at, maxValue, bad);
      case 'Node':
        return { type: 'Node', verb, node: nodeInput(g, object(g, goField(op, 'Node'), 'Node.Node', 'api.Node')) };
      case 'Service': {
        const service = object(g, goField(op, 'Service'), 'Service.Service', 'api.AgentService');
        return {
          type: 'Service',
          verb,
          node: g.string(goField(op, 'Node'), 'Service.Node') ?? '',
          service: serviceInput(g, service),
          index: g.int(goField(service, 'ModifyIndex'), 'Service.Service.ModifyIndex', 'uint64') ?? 0,
        };
      }
      case 'Check': {
        const check = object(g, goField(op, 'Check'), 'Check.Check', 'api.HealthCheck');
        return {
          type: 'Check',
          verb,
          check: checkInput(g, check),
          index: g.int(goField(check, 'ModifyIndex'), 'Check.Check.ModifyIndex', 'uint64') ?? 0,
        };
      }
      case 'Session': {
        const session = object(g, goField(op, 'Session'), 'Session.Session', 'api.SessionEntry');
        return { type: 'Session', verb, id: g.string(goField(session, 'ID'), 'Session.Session.ID') ?? '' };
      }
    }
  });
}

/** A nested struct; absent or null is the zero value (no field set). */
function object(g: GoFields, value: unknown, path: string, type: string): Obj {
  if (!present(value)) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw g.typeError(value, path, type);
  return value as Obj;
}

function kvOp(
  g: GoFields,
  o: Obj,
  verb: string,
  at: number,
  maxValue: number,
  bad: (detail: string) => Error,
): KvTxnOp {
  const uint = (name: string): bigint => {
    const v = goField(o, name);
    if (!present(v)) return 0n;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
      throw bad(`operation ${at}: KV.${name} is not a uint64`);
    return BigInt(v);
  };
  const key = g.string(goField(o, 'Key'), 'KV.Key') ?? '';
  const encoded = g.string(goField(o, 'Value'), 'KV.Value') ?? '';
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded) || encoded.length % 4 === 1) {
    throw bad(`illegal base64 data in the value of operation ${at}`);
  }
  const value = Buffer.from(encoded, 'base64');
  if (value.length > maxValue) throw agentError('TXN_VALUE_TOO_LARGE', { key, size: value.length, max: maxValue });
  return {
    type: 'KV',
    verb,
    key,
    value: storedKv(uint('Flags'), value),
    index: Number(uint('Index')),
    session: g.string(goField(o, 'Session'), 'KV.Session') ?? '',
  };
}

/** api.Node: the fields convertOps keeps. */
function nodeInput(g: GoFields, o: Obj): NodeTxnOp['node'] {
  const path = (name: string): string => `Node.Node.${name}`;
  return {
    ID: g.string(goField(o, 'ID'), path('ID')) ?? '',
    Node: g.string(goField(o, 'Node'), path('Node')) ?? '',
    Address: g.string(goField(o, 'Address'), path('Address')) ?? '',
    Datacenter: g.string(goField(o, 'Datacenter'), path('Datacenter')) ?? '',
    TaggedAddresses: g.stringMap(goField(o, 'TaggedAddresses'), path('TaggedAddresses')) ?? {},
    Meta: g.stringMap(goField(o, 'Meta'), path('Meta')) ?? {},
    ModifyIndex: g.int(goField(o, 'ModifyIndex'), path('ModifyIndex'), 'uint64') ?? 0,
  };
}

/** api.AgentService: the fields convertOps keeps (a proxy's destination and local service among its Proxy's). */
function serviceInput(g: GoFields, o: Obj): ServiceInput {
  const path = (name: string): string => `Service.Service.${name}`;
  const weights = goField(o, 'Weights');
  const w = present(weights) ? object(g, weights, path('Weights'), 'api.AgentWeights') : undefined;
  const proxy = goField(o, 'Proxy');
  const p = present(proxy) ? object(g, proxy, path('Proxy'), 'api.AgentServiceConnectProxyConfig') : undefined;
  return definedOnly<ServiceInput>({
    ID: g.string(goField(o, 'ID'), path('ID')),
    Service: g.string(goField(o, 'Service'), path('Service')),
    Kind: g.string(goField(o, 'Kind'), path('Kind')),
    Tags: g.strings(goField(o, 'Tags'), path('Tags')),
    Address: g.string(goField(o, 'Address'), path('Address')),
    Meta: g.stringMap(goField(o, 'Meta'), path('Meta')),
    Port: g.int(goField(o, 'Port'), path('Port'), 'int'),
    Weights:
      w === undefined
        ? undefined
        : {
            Passing: g.int(goField(w, 'Passing'), path('Weights.Passing'), 'int') ?? 0,
            Warning: g.int(goField(w, 'Warning'), path('Weights.Warning'), 'int') ?? 0,
          },
    EnableTagOverride: g.bool(goField(o, 'EnableTagOverride'), path('EnableTagOverride')),
    Proxy:
      p === undefined
        ? undefined
        : definedOnly({
            DestinationServiceName: g.string(
              goField(p, 'DestinationServiceName'),
              path('Proxy.DestinationServiceName'),
            ),
            DestinationServiceID: g.string(goField(p, 'DestinationServiceID'), path('Proxy.DestinationServiceID')),
            LocalServiceAddress: g.string(goField(p, 'LocalServiceAddress'), path('Proxy.LocalServiceAddress')),
            LocalServicePort: g.int(goField(p, 'LocalServicePort'), path('Proxy.LocalServicePort'), 'int'),
          }),
  });
}

/** HealthCheckDefinition's fields convertOps keeps, shown when set; durations as Go writes them. */
const DEFINITION_TEXT = ['HTTP', 'Method', 'Body', 'TLSServerName', 'TCP', 'GRPC', 'OSService'] as const;
const DEFINITION_BOOL = ['TLSSkipVerify', 'GRPCUseTLS'] as const;
const DEFINITION_DURATIONS = ['Interval', 'Timeout', 'DeregisterCriticalServiceAfter'] as const;

/** api.HealthCheck: the fields convertOps keeps (not Type, nor the top-level Interval and Timeout). */
function checkInput(g: GoFields, o: Obj): CheckInput {
  const path = (name: string): string => `Check.Check.${name}`;
  const d = object(g, goField(o, 'Definition'), path('Definition'), 'api.HealthCheckDefinition');
  const definition: Record<string, unknown> = {};
  for (const name of DEFINITION_TEXT) {
    const value = g.string(goField(d, name), path(`Definition.${name}`));
    if (value !== undefined && value !== '') definition[name] = value;
  }
  for (const name of DEFINITION_BOOL) {
    if (g.bool(goField(d, name), path(`Definition.${name}`)) === true) definition[name] = true;
  }
  const header = goField(d, 'Header');
  if (present(header)) {
    const h = object(g, header, path('Definition.Header'), 'map[string][]string');
    const out: Record<string, string[]> = {};
    for (const [k, v] of Object.entries(h)) out[k] = g.strings(v, path('Definition.Header')) ?? [];
    if (Object.keys(out).length > 0) definition.Header = out;
  }
  // Consul takes Interval (a duration's text or nanoseconds) over IntervalDuration (nanoseconds).
  for (const name of DEFINITION_DURATIONS) {
    const ms = g.duration(goField(d, name)) || g.duration(goField(d, `${name}Duration`));
    if (ms !== undefined && ms !== 0) definition[name] = formatDuration(ms);
  }
  return definedOnly<CheckInput>({
    Node: g.string(goField(o, 'Node'), path('Node')),
    CheckID: g.string(goField(o, 'CheckID'), path('CheckID')),
    Name: g.string(goField(o, 'Name'), path('Name')),
    Status: g.string(goField(o, 'Status'), path('Status')) as CheckInput['Status'],
    Notes: g.string(goField(o, 'Notes'), path('Notes')),
    Output: g.string(goField(o, 'Output'), path('Output')),
    ServiceID: g.string(goField(o, 'ServiceID'), path('ServiceID')),
    ServiceName: g.string(goField(o, 'ServiceName'), path('ServiceName')),
    ServiceTags: g.strings(goField(o, 'ServiceTags'), path('ServiceTags')),
    ExposedPort: g.int(goField(o, 'ExposedPort'), path('ExposedPort'), 'int'),
    Definition: definition,
  });
}
