// Bodies of PUT /v1/catalog/register and /deregister, read as Go's decoder fills RegisterRequest
// and DeregisterRequest: field names match case-insensitively, null is the zero value, a wrong
// type is Go's error behind "Request decode failed: ". Unknown fields are ignored, as Consul does.
import type { CheckInput, Deregistration, Registration, ServiceInput } from '../../catalog/register.js';
import type { ProxyConfig, Upstream } from '../../catalog/model.js';
import { GoFields } from '../go-fields.js';

const PREFIX = 'Request decode failed';

type Obj = Readonly<Record<string, unknown>>;

/** The field of `o` named `name`, case-insensitively (an exact match first, as Go's decoder). */
function field(o: Obj, name: string): unknown {
  if (name in o) return o[name];
  const lower = name.toLowerCase();
  for (const key of Object.keys(o)) if (key.toLowerCase() === lower) return o[key];
  return undefined;
}

function object(g: GoFields, value: unknown, path: string, type: string): Obj | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw g.typeError(value, path, type);
  return value as Obj;
}

function parseJson(g: GoFields, body: Buffer | undefined): Obj {
  const text = body === undefined ? '' : body.toString('utf8');
  if (text.trim() === '') throw g.fail('EOF');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw g.fail('invalid character in JSON body');
  }
  return object(g, value, '', 'structs.RegisterRequest') ?? {};
}

export function decodeRegistration(body: Buffer | undefined): Registration {
  const g = new GoFields(PREFIX, 'RegisterRequest');
  const o = parseJson(g, body);
  const service = object(g, field(o, 'Service'), 'Service', 'structs.NodeService');
  const checks: CheckInput[] = [];
  const check = object(g, field(o, 'Check'), 'Check', 'structs.HealthCheck');
  if (check !== undefined) checks.push(decodeCheck(g, check, 'Check'));
  const list = field(o, 'Checks');
  if (list !== undefined && list !== null) {
    if (!Array.isArray(list)) throw g.typeError(list, 'Checks', 'structs.HealthChecks');
    for (const item of list)
      checks.push(decodeCheck(g, object(g, item, 'Checks', 'structs.HealthCheck') ?? {}, 'Checks'));
  }
  return {
    Datacenter: g.string(field(o, 'Datacenter'), 'Datacenter') ?? '',
    ID: g.string(field(o, 'ID'), 'ID') ?? '',
    Node: g.string(field(o, 'Node'), 'Node') ?? '',
    Address: g.string(field(o, 'Address'), 'Address') ?? '',
    TaggedAddresses: g.stringMap(field(o, 'TaggedAddresses'), 'TaggedAddresses') ?? {},
    NodeMeta: g.stringMap(field(o, 'NodeMeta'), 'NodeMeta') ?? {},
    Service: service === undefined ? undefined : decodeService(g, service),
    Checks: checks,
    SkipNodeUpdate: g.bool(field(o, 'SkipNodeUpdate'), 'SkipNodeUpdate') ?? false,
  };
}

export function decodeDeregistration(body: Buffer | undefined): Deregistration {
  const g = new GoFields(PREFIX, 'DeregisterRequest');
  const o = parseJson(g, body);
  return {
    Datacenter: g.string(field(o, 'Datacenter'), 'Datacenter') ?? '',
    Node: g.string(field(o, 'Node'), 'Node') ?? '',
    ServiceID: g.string(field(o, 'ServiceID'), 'ServiceID') ?? '',
    CheckID: g.string(field(o, 'CheckID'), 'CheckID') ?? '',
  };
}

/** Only the fields the request set, so that the domain fills Consul's defaults for the rest. */
function defined<T extends object>(o: T): T {
  for (const key of Object.keys(o) as (keyof T)[]) if (o[key] === undefined) delete o[key];
  return o;
}

function decodeService(g: GoFields, o: Obj): ServiceInput {
  const path = (name: string): string => `Service.${name}`;
  const weights = object(g, field(o, 'Weights'), path('Weights'), 'structs.Weights');
  const tagged = object(g, field(o, 'TaggedAddresses'), path('TaggedAddresses'), 'map[string]structs.ServiceAddress');
  const proxy = object(g, field(o, 'Proxy'), path('Proxy'), 'structs.ConnectProxyConfig');
  const connect = object(g, field(o, 'Connect'), path('Connect'), 'structs.ServiceConnect');
  return defined<ServiceInput>({
    Kind: g.string(field(o, 'Kind'), path('Kind')),
    ID: g.string(field(o, 'ID'), path('ID')),
    Service: g.string(field(o, 'Service'), path('Service')),
    Tags: g.strings(field(o, 'Tags'), path('Tags')),
    Address: g.string(field(o, 'Address'), path('Address')),
    TaggedAddresses:
      tagged === undefined
        ? undefined
        : Object.fromEntries(
            Object.entries(tagged).map(([k, v]) => {
              const a = object(g, v, path('TaggedAddresses'), 'structs.ServiceAddress') ?? {};
              return [
                k,
                {
                  Address: g.string(field(a, 'Address'), path('TaggedAddresses.Address')) ?? '',
                  Port: g.int(field(a, 'Port'), path('TaggedAddresses.Port'), 'int') ?? 0,
                },
              ];
            }),
          ),
    Meta: g.stringMap(field(o, 'Meta'), path('Meta')),
    Port: g.int(field(o, 'Port'), path('Port'), 'int'),
    Weights:
      weights === undefined
        ? undefined
        : {
            Passing: g.int(field(weights, 'Passing'), path('Weights.Passing'), 'int') ?? 0,
            Warning: g.int(field(weights, 'Warning'), path('Weights.Warning'), 'int') ?? 0,
          },
    EnableTagOverride: g.bool(field(o, 'EnableTagOverride'), path('EnableTagOverride')),
    Proxy: proxy === undefined ? undefined : decodeProxy(g, proxy),
    Connect: connect === undefined ? undefined : { Native: g.bool(field(connect, 'Native'), path('Connect.Native')) },
  });
}

function decodeProxy(g: GoFields, o: Obj): ProxyConfig {
  const path = (name: string): string => `Service.Proxy.${name}`;
  const upstreams = field(o, 'Upstreams');
  if (upstreams !== undefined && upstreams !== null && !Array.isArray(upstreams))
    throw g.typeError(upstreams, path('Upstreams'), 'structs.Upstreams');
  const config = object(g, field(o, 'Config'), path('Config'), 'map[string]interface {}');
  return defined<ProxyConfig>({
    DestinationServiceName: g.string(field(o, 'DestinationServiceName'), path('DestinationServiceName')),
    DestinationServiceID: g.string(field(o, 'DestinationServiceID'), path('DestinationServiceID')),
    LocalServiceAddress: g.string(field(o, 'LocalServiceAddress'), path('LocalServiceAddress')),
    LocalServicePort: g.int(field(o, 'LocalServicePort'), path('LocalServicePort'), 'int'),
    Mode: g.string(field(o, 'Mode'), path('Mode')),
    Config: config,
    Upstreams: Array.isArray(upstreams)
      ? upstreams.map((item: unknown): Upstream => {
          const u = object(g, item, path('Upstreams'), 'structs.Upstream') ?? {};
          return defined<Upstream>({
            DestinationType: g.string(field(u, 'DestinationType'), path('Upstreams.DestinationType')),
            DestinationNamespace: g.string(field(u, 'DestinationNamespace'), path('Upstreams.DestinationNamespace')),
            DestinationName: g.string(field(u, 'DestinationName'), path('Upstreams.DestinationName')) ?? '',
            Datacenter: g.string(field(u, 'Datacenter'), path('Upstreams.Datacenter')),
            LocalBindAddress: g.string(field(u, 'LocalBindAddress'), path('Upstreams.LocalBindAddress')),
            LocalBindPort: g.int(field(u, 'LocalBindPort'), path('Upstreams.LocalBindPort'), 'int'),
            Config: object(g, field(u, 'Config'), path('Upstreams.Config'), 'map[string]interface {}'),
          });
        })
      : undefined,
  });
}

const DEFINITION_FIELDS = ['HTTP', 'TCP', 'GRPC', 'TTL', 'Interval', 'Timeout', 'DeregisterCriticalServiceAfter'];

function decodeCheck(g: GoFields, o: Obj, at: string): CheckInput {
  const path = (name: string): string => `${at}.${name}`;
  const definition = object(g, field(o, 'Definition'), path('Definition'), 'structs.HealthCheckDefinition') ?? {};
  const shown: Record<string, unknown> = {};
  for (const name of DEFINITION_FIELDS) {
    const value = field(definition, name);
    if (value !== undefined && value !== null && value !== '' && value !== 0) shown[name] = value;
  }
  const duration = (name: string): string | undefined => {
    const value = field(definition, name);
    return typeof value === 'string' ? value : undefined;
  };
  return defined<CheckInput>({
    Node: g.string(field(o, 'Node'), path('Node')),
    CheckID: g.string(field(o, 'CheckID'), path('CheckID')),
    Name: g.string(field(o, 'Name'), path('Name')),
    Status: g.string(field(o, 'Status'), path('Status')) as CheckInput['Status'],
    Notes: g.string(field(o, 'Notes'), path('Notes')),
    Output: g.string(field(o, 'Output'), path('Output')),
    ServiceID: g.string(field(o, 'ServiceID'), path('ServiceID')),
    Type: g.string(field(o, 'Type'), path('Type')),
    Interval: g.string(field(o, 'Interval'), path('Interval')) ?? duration('Interval'),
    Timeout: g.string(field(o, 'Timeout'), path('Timeout')) ?? duration('Timeout'),
    Definition: shown,
  });
}
