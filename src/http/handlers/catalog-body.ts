// Bodies of PUT /v1/catalog/register and /deregister, read as Go's decoder fills RegisterRequest
// and DeregisterRequest: field names match case-insensitively, null is the zero value, a wrong
// type is Go's error behind "Request decode failed: ". Unknown fields are ignored, as Consul does.
import type { CheckInput, Deregistration, Registration, ServiceInput } from '../../catalog/register.js';
import type { ProxyConfig, Upstream } from '../../catalog/model.js';
import { definedOnly, goField, GoFields } from '../go-fields.js';

const PREFIX = 'Request decode failed';

type Obj = Readonly<Record<string, unknown>>;

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
  const service = object(g, goField(o, 'Service'), 'Service', 'structs.NodeService');
  const checks: CheckInput[] = [];
  const check = object(g, goField(o, 'Check'), 'Check', 'structs.HealthCheck');
  if (check !== undefined) checks.push(decodeCheck(g, check, 'Check'));
  const list = goField(o, 'Checks');
  if (list !== undefined && list !== null) {
    if (!Array.isArray(list)) throw g.typeError(list, 'Checks', 'structs.HealthChecks');
    for (const item of list)
      checks.push(decodeCheck(g, object(g, item, 'Checks', 'structs.HealthCheck') ?? {}, 'Checks'));
  }
  return {
    Datacenter: g.string(goField(o, 'Datacenter'), 'Datacenter') ?? '',
    ID: g.string(goField(o, 'ID'), 'ID') ?? '',
    Node: g.string(goField(o, 'Node'), 'Node') ?? '',
    Address: g.string(goField(o, 'Address'), 'Address') ?? '',
    TaggedAddresses: g.stringMap(goField(o, 'TaggedAddresses'), 'TaggedAddresses') ?? {},
    NodeMeta: g.stringMap(goField(o, 'NodeMeta'), 'NodeMeta') ?? {},
    Service: service === undefined ? undefined : decodeService(g, service),
    Checks: checks,
    SkipNodeUpdate: g.bool(goField(o, 'SkipNodeUpdate'), 'SkipNodeUpdate') ?? false,
  };
}

export function decodeDeregistration(body: Buffer | undefined): Deregistration {
  const g = new GoFields(PREFIX, 'DeregisterRequest');
  const o = parseJson(g, body);
  return {
    Datacenter: g.string(goField(o, 'Datacenter'), 'Datacenter') ?? '',
    Node: g.string(goField(o, 'Node'), 'Node') ?? '',
    ServiceID: g.string(goField(o, 'ServiceID'), 'ServiceID') ?? '',
    CheckID: g.string(goField(o, 'CheckID'), 'CheckID') ?? '',
  };
}

/** Only the fields the request set, so that the domain fills Consul's defaults for the rest. */

function decodeService(g: GoFields, o: Obj): ServiceInput {
  const path = (name: string): string => `Service.${name}`;
  const weights = object(g, goField(o, 'Weights'), path('Weights'), 'structs.Weights');
  const tagged = object(g, goField(o, 'TaggedAddresses'), path('TaggedAddresses'), 'map[string]structs.ServiceAddress');
  const proxy = object(g, goField(o, 'Proxy'), path('Proxy'), 'structs.ConnectProxyConfig');
  const connect = object(g, goField(o, 'Connect'), path('Connect'), 'structs.ServiceConnect');
  return definedOnly<ServiceInput>({
    Kind: g.string(goField(o, 'Kind'), path('Kind')),
    ID: g.string(goField(o, 'ID'), path('ID')),
    Service: g.string(goField(o, 'Service'), path('Service')),
    Tags: g.strings(goField(o, 'Tags'), path('Tags')),
    Address: g.string(goField(o, 'Address'), path('Address')),
    TaggedAddresses:
      tagged === undefined
        ? undefined
        : Object.fromEntries(
            Object.entries(tagged).map(([k, v]) => {
              const a = object(g, v, path('TaggedAddresses'), 'structs.ServiceAddress') ?? {};
              return [
                k,
                {
                  Address: g.string(goField(a, 'Address'), path('TaggedAddresses.Address')) ?? '',
                  Port: g.int(goField(a, 'Port'), path('TaggedAddresses.Port'), 'int') ?? 0,
                },
              ];
            }),
          ),
    Meta: g.stringMap(goField(o, 'Meta'), path('Meta')),
    Port: g.int(goField(o, 'Port'), path('Port'), 'int'),
    Weights:
      weights === undefined
        ? undefined
        : {
            Passing: g.int(goField(weights, 'Passing'), path('Weights.Passing'), 'int') ?? 0,
            Warning: g.int(goField(weights, 'Warning'), path('Weights.Warning'), 'int') ?? 0,
          },
    EnableTagOverride: g.bool(goField(o, 'EnableTagOverride'), path('EnableTagOverride')),
    Proxy: proxy === undefined ? undefined : decodeProxy(g, proxy),
    Connect: connect === undefined ? undefined : { Native: g.bool(goField(connect, 'Native'), path('Connect.Native')) },
  });
}

function decodeProxy(g: GoFields, o: Obj): ProxyConfig {
  const path = (name: string): string => `Service.Proxy.${name}`;
  const upstreams = goField(o, 'Upstreams');
  if (upstreams !== undefined && upstreams !== null && !Array.isArray(upstreams))
    throw g.typeError(upstreams, path('Upstreams'), 'structs.Upstreams');
  const config = object(g, goField(o, 'Config'), path('Config'), 'map[string]interface {}');
  return definedOnly<ProxyConfig>({
    DestinationServiceName: g.string(goField(o, 'DestinationServiceName'), path('DestinationServiceName')),
    DestinationServiceID: g.string(goField(o, 'DestinationServiceID'), path('DestinationServiceID')),
    LocalServiceAddress: g.string(goField(o, 'LocalServiceAddress'), path('LocalServiceAddress')),
    LocalServicePort: g.int(goField(o, 'LocalServicePort'), path('LocalServicePort'), 'int'),
    Mode: g.string(goField(o, 'Mode'), path('Mode')),
    Config: config,
    Upstreams: Array.isArray(upstreams)
      ? upstreams.map((item: unknown): Upstream => {
          const u = object(g, item, path('Upstreams'), 'structs.Upstream') ?? {};
          return definedOnly<Upstream>({
            DestinationType: g.string(goField(u, 'DestinationType'), path('Upstreams.DestinationType')),
            DestinationNamespace: g.string(goField(u, 'DestinationNamespace'), path('Upstreams.DestinationNamespace')),
            DestinationName: g.string(goField(u, 'DestinationName'), path('Upstreams.DestinationName')) ?? '',
            Datacenter: g.string(goField(u, 'Datacenter'), path('Upstreams.Datacenter')),
            LocalBindAddress: g.string(goField(u, 'LocalBindAddress'), path('Upstreams.LocalBindAddress')),
            LocalBindPort: g.int(goField(u, 'LocalBindPort'), path('Upstreams.LocalBindPort'), 'int'),
            Config: object(g, goField(u, 'Config'), path('Upstreams.Config'), 'map[string]interface {}'),
          });
        })
      : undefined,
  });
}

const DEFINITION_FIELDS = ['HTTP', 'TCP', 'GRPC', 'TTL', 'Interval', 'Timeout', 'DeregisterCriticalServiceAfter'];

function decodeCheck(g: GoFields, o: Obj, at: string): CheckInput {
  const path = (name: string): string => `${at}.${name}`;
  const definition = object(g, goField(o, 'Definition'), path('Definition'), 'structs.HealthCheckDefinition') ?? {};
  const shown: Record<string, unknown> = {};
  for (const name of DEFINITION_FIELDS) {
    const value = goField(definition, name);
    if (value !== undefined && value !== null && value !== '' && value !== 0) shown[name] = value;
  }
  const duration = (name: string): string | undefined => {
    const value = goField(definition, name);
    return typeof value === 'string' ? value : undefined;
  };
  return definedOnly<CheckInput>({
    Node: g.string(goField(o, 'Node'), path('Node')),
    CheckID: g.string(goField(o, 'CheckID'), path('CheckID')),
    Name: g.string(goField(o, 'Name'), path('Name')),
    Status: g.string(goField(o, 'Status'), path('Status')) as CheckInput['Status'],
    Notes: g.string(goField(o, 'Notes'), path('Notes')),
    Output: g.string(goField(o, 'Output'), path('Output')),
    ServiceID: g.string(goField(o, 'ServiceID'), path('ServiceID')),
    Type: g.string(goField(o, 'Type'), path('Type')),
    Interval: g.string(goField(o, 'Interval'), path('Interval')) ?? duration('Interval'),
    Timeout: g.string(goField(o, 'Timeout'), path('Timeout')) ?? duration('Timeout'),
    Definition: shown,
  });
}
