// Decodes Consul's ServiceDefinition and CheckDefinition from a request body or a config block
// (src/local/fields.ts reads either spelling). Validation is validate.ts's.
import { Fields, type Raw } from './fields.js';
import type {
  CheckDefinition,
  CheckSpec,
  ProxyConfig,
  ServiceAddress,
  ServiceDefinition,
  Upstream,
  Weights,
} from './model.js';

/** Fields of Consul's service definition that svc-agent accepts and does not use: never unknown keys. */
const SERVICE_FIELDS_UNREAD = ['Token', 'SocketPath', 'Locality', 'Namespace', 'Partition'];
/** The same of a check: also both spellings of its ID and arguments, whichever was read. */
const CHECK_FIELDS_UNREAD = [
  'Token',
  'Shell',
  'TCPUseTLS',
  'H2PingUseTLS',
  'Namespace',
  'Partition',
  'ServiceID',
  'ID',
  'CheckID',
  'Args',
  'ScriptArgs',
];

export function readServiceDefinition(raw: Raw, path = ''): ServiceDefinition {
  const f = new Fields(raw, path).checked();
  f.known(...SERVICE_FIELDS_UNREAD);
  const connect = f.nested('Connect');
  const sidecar = connect?.object('SidecarService');
  // An empty Check is no check (Consul's CheckType.Empty); an HCL block arrives as a list of one.
  const checks = [
    ...f
      .objects('Check')
      .filter((c) => Object.keys(c).length > 0)
      .map((c) => readCheckSpec(new Fields(c, 'Check'))),
    ...f.objects('Checks').map((c, i) => readCheckSpec(new Fields(c, `Checks[${i}]`))),
  ];
  const proxy = f.nested('Proxy');
  return {
    kind: f.string('Kind'),
    id: f.string('ID'),
    name: f.string('Name'),
    tags: f.strings('Tags'),
    address: f.string('Address'),
    taggedAddresses: readTaggedAddresses(f),
    meta: f.stringMap('Meta'),
    port: f.int('Port'),
    weights: readWeights(f.nested('Weights')),
    enableTagOverride: f.bool('EnableTagOverride'),
    proxy: proxy === undefined ? undefined : readProxy(proxy),
    connectNative: connect?.bool('Native') ?? false,
    sidecarService: sidecar === undefined ? undefined : readServiceDefinition(sidecar, 'Connect.SidecarService'),
    checks,
  };
}

export function readCheckDefinition(raw: Raw): CheckDefinition {
  const f = new Fields(raw, '');
  f.known('ServiceID');
  return { ...readCheckSpec(f), checkId: f.string('ID') || f.string('CheckID'), serviceId: f.string('ServiceID') };
}

export function readCheckSpec(f: Fields): CheckSpec {
  f.checked().known(...CHECK_FIELDS_UNREAD);
  return {
    checkId: f.string('CheckID') || f.string('ID'),
    name: f.string('Name'),
    status: f.string('Status'),
    notes: f.string('Notes'),
    scriptArgs: f.has('ScriptArgs') ? f.strings('ScriptArgs') : f.strings('Args'),
    http: f.string('HTTP'),
    header: readHeader(f),
    method: f.string('Method'),
    body: f.string('Body'),
    disableRedirects: f.bool('DisableRedirects'),
    tcp: f.string('TCP'),
    udp: f.string('UDP'),
    h2ping: f.string('H2PING'),
    grpc: f.string('GRPC'),
    grpcUseTls: f.bool('GRPCUseTLS'),
    osService: f.string('OSService'),
    dockerContainerId: f.string('DockerContainerID'),
    tlsServerName: f.string('TLSServerName'),
    tlsSkipVerify: f.bool('TLSSkipVerify'),
    aliasNode: f.string('AliasNode'),
    aliasService: f.string('AliasService'),
    intervalMs: f.duration('Interval'),
    timeoutMs: f.duration('Timeout'),
    ttlMs: f.duration('TTL'),
    successBeforePassing: f.int('SuccessBeforePassing'),
    failuresBeforeWarning: f.int('FailuresBeforeWarning'),
    failuresBeforeCritical: f.int('FailuresBeforeCritical'),
    deregisterCriticalServiceAfterMs: f.duration('DeregisterCriticalServiceAfter'),
    outputMaxSize: f.int('OutputMaxSize'),
  };
}

function readHeader(f: Fields): Record<string, string[]> {
  const raw = f.object('Header') ?? {};
  const values = new Fields(raw, 'Header');
  const out: Record<string, string[]> = {};
  for (const name of Object.keys(raw)) out[name] = values.strings(name);
  return out;
}

function readTaggedAddresses(f: Fields): Record<string, ServiceAddress> | undefined {
  const raw = f.object('TaggedAddresses');
  if (raw === undefined) return undefined;
  const out: Record<string, ServiceAddress> = {};
  for (const [tag, value] of Object.entries(raw)) {
    const addr = new Fields((value ?? {}) as Raw, `TaggedAddresses.${tag}`);
    out[tag] = { address: addr.string('Address'), port: addr.int('Port') };
  }
  return out;
}

function readWeights(f: Fields | undefined): Weights | undefined {
  return f === undefined ? undefined : { passing: f.int('Passing'), warning: f.int('Warning') };
}

function readProxy(f: Fields): ProxyConfig {
  const config = f.object('Config');
  return {
    destinationServiceName: f.string('DestinationServiceName'),
    destinationServiceId: f.string('DestinationServiceID'),
    localServiceAddress: f.string('LocalServiceAddress'),
    localServicePort: f.int('LocalServicePort'),
    mode: f.string('Mode'),
    config: config === undefined ? undefined : { ...config },
    upstreams: f.objects('Upstreams').map((u, i) => readUpstream(new Fields(u, `Proxy.Upstreams[${i}]`))),
  };
}

function readUpstream(f: Fields): Upstream {
  const config = f.object('Config');
  return {
    // Consul defaults an upstream's type when it registers it.
    destinationType: f.string('DestinationType') || 'service',
    destinationNamespace: f.string('DestinationNamespace'),
    destinationName: f.string('DestinationName'),
    datacenter: f.string('Datacenter'),
    localBindAddress: f.string('LocalBindAddress'),
    localBindPort: f.int('LocalBindPort'),
    config: config === undefined ? undefined : { ...config },
  };
}
