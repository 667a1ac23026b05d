// service-defaults and proxy-defaults, as Consul 1.17's structs (agent/structs/config_entry.go):
// their fields, Normalize, Validate and ACLs. The built-in proxy reads its protocol, timeouts and
// upstream defaults from them (src/proxy/central-config.ts).
import {
  ANY,
  ANY_MAP,
  BOOL,
  DURATION,
  INT,
  pointer,
  sliceOf,
  STRING,
  STRINGS,
  struct,
  UINT,
  goQuote,
  type Field,
  type GoStruct,
} from './decode.js';
import {
  KIND_FIELD,
  list,
  META_FIELD,
  metaError,
  metaProblems,
  NAME_FIELD,
  Problems,
  PROXY_CONFIG_GLOBAL,
  PROXY_DEFAULTS,
  SERVICE_DEFAULTS,
  str,
  strings,
  sub,
  WILDCARD,
  type KindSpec,
} from './kind.js';

const TRANSPARENT_PROXY = struct([
  { name: 'OutboundListenerPort', alias: 'outbound_listener_port', type: INT, omitEmpty: true },
  { name: 'DialedDirectly', alias: 'dialed_directly', type: BOOL, omitEmpty: true },
]);

const MESH_GATEWAY = struct([{ name: 'Mode', type: STRING, omitEmpty: true }]);

const EXPOSE = struct([
  { name: 'Checks', type: BOOL, omitEmpty: true },
  {
    name: 'Paths',
    type: sliceOf(
      struct([
        { name: 'ListenerPort', alias: 'listener_port', type: INT, omitEmpty: true },
        { name: 'Path', type: STRING, omitEmpty: true },
        { name: 'LocalPathPort', alias: 'local_path_port', type: INT, omitEmpty: true },
        { name: 'Protocol', type: STRING, omitEmpty: true },
        { name: 'ParsedFromCheck', type: BOOL, omitEmpty: true },
      ]),
    ),
    omitEmpty: true,
  },
]);

const ENVOY_EXTENSIONS: Field = {
  name: 'EnvoyExtensions',
  alias: 'envoy_extensions',
  type: sliceOf(
    struct([
      { name: 'Name', type: STRING },
      { name: 'Required', type: BOOL },
      { name: 'Arguments', type: ANY_MAP },
      { name: 'ConsulVersion', alias: 'consul_version', type: STRING },
      { name: 'EnvoyVersion', alias: 'envoy_version', type: STRING },
    ]),
  ),
  omitEmpty: true,
};

/** UpstreamConfig: the defaults of a service's upstreams, or one upstream's override (named). */
const UPSTREAM_CONFIG_FIELDS: readonly Field[] = [
  { name: 'Name', type: STRING, omitEmpty: true },
  { name: 'Peer', type: STRING, omitEmpty: true },
  { name: 'EnvoyListenerJSON', alias: 'envoy_listener_json', type: STRING, omitEmpty: true },
  { name: 'EnvoyClusterJSON', alias: 'envoy_cluster_json', type: STRING, omitEmpty: true },
  { name: 'Protocol', type: STRING, omitEmpty: true },
  { name: 'ConnectTimeoutMs', alias: 'connect_timeout_ms', type: INT, omitEmpty: true },
  {
    name: 'Limits',
    type: pointer([
      { name: 'MaxConnections', alias: 'max_connections', type: INT, omitEmpty: true, nilable: true },
      { name: 'MaxPendingRequests', alias: 'max_pending_requests', type: INT, omitEmpty: true, nilable: true },
      { name: 'MaxConcurrentRequests', alias: 'max_concurrent_requests', type: INT, omitEmpty: true, nilable: true },
    ]),
    omitEmpty: true,
  },
  {
    name: 'PassiveHealthCheck',
    alias: 'passive_health_check',
    type: pointer([
      { name: 'Interval', type: DURATION, omitEmpty: true },
      { name: 'MaxFailures', alias: 'max_failures', type: UINT, omitEmpty: true },
      {
        name: 'EnforcingConsecutive5xx',
        alias: 'enforcing_consecutive_5xx',
        type: UINT,
        omitEmpty: true,
        nilable: true,
      },
      { name: 'MaxEjectionPercent', alias: 'max_ejection_percent', type: UINT, omitEmpty: true, nilable: true },
      { name: 'BaseEjectionTime', alias: 'base_ejection_time', type: DURATION, omitEmpty: true, nilable: true },
    ]),
    omitEmpty: true,
  },
  { name: 'MeshGateway', alias: 'mesh_gateway', type: MESH_GATEWAY, omitEmpty: true },
  { name: 'BalanceOutboundConnections', alias: 'balance_outbound_connections', type: STRING, omitEmpty: true },
];

const SERVICE_DEFAULTS_FIELDS: readonly Field[] = [
  KIND_FIELD,
  NAME_FIELD,
  { name: 'Protocol', type: STRING },
  { name: 'Mode', type: STRING, omitEmpty: true },
  { name: 'TransparentProxy', alias: 'transparent_proxy', type: TRANSPARENT_PROXY, omitEmpty: true },
  { name: 'MutualTLSMode', alias: 'mutual_tls_mode', type: STRING, omitEmpty: true },
  { name: 'MeshGateway', alias: 'mesh_gateway', type: MESH_GATEWAY, omitEmpty: true },
  { name: 'Expose', type: EXPOSE, omitEmpty: true },
  { name: 'ExternalSNI', alias: 'external_sni', type: STRING, omitEmpty: true },
  {
    name: 'UpstreamConfig',
    alias: 'upstream_config',
    type: pointer([
      { name: 'Overrides', type: sliceOf(pointer(UPSTREAM_CONFIG_FIELDS)), omitEmpty: true },
      { name: 'Defaults', type: pointer(UPSTREAM_CONFIG_FIELDS), omitEmpty: true },
    ]),
    omitEmpty: true,
  },
  {
    name: 'Destination',
    type: pointer([
      { name: 'Addresses', type: STRINGS, omitEmpty: true },
      { name: 'Port', type: INT, omitEmpty: true },
    ]),
    omitEmpty: true,
  },
  { name: 'MaxInboundConnections', alias: 'max_inbound_connections', type: INT, omitEmpty: true },
  { name: 'LocalConnectTimeoutMs', alias: 'local_connect_timeout_ms', type: INT, omitEmpty: true },
  { name: 'LocalRequestTimeoutMs', alias: 'local_request_timeout_ms', type: INT, omitEmpty: true },
  { name: 'BalanceInboundConnections', alias: 'balance_inbound_connections', type: STRING, omitEmpty: true },
  { name: 'RateLimits', alias: 'rate_limits', type: ANY, omitEmpty: true, nilable: true },
  ENVOY_EXTENSIONS,
  META_FIELD,
];

const PROXY_DEFAULTS_FIELDS: readonly Field[] = [
  KIND_FIELD,
  NAME_FIELD,
  { name: 'Config', type: ANY_MAP },
  { name: 'Mode', type: STRING, omitEmpty: true },
  { name: 'TransparentProxy', alias: 'transparent_proxy', type: TRANSPARENT_PROXY, omitEmpty: true },
  { name: 'MutualTLSMode', alias: 'mutual_tls_mode', type: STRING, omitEmpty: true },
  { name: 'MeshGateway', alias: 'mesh_gateway', type: MESH_GATEWAY, omitEmpty: true },
  { name: 'Expose', type: EXPOSE, omitEmpty: true },
  {
    name: 'AccessLogs',
    alias: 'access_logs',
    type: struct([
      { name: 'Enabled', type: BOOL, omitEmpty: true },
      { name: 'DisableListenerLogs', alias: 'disable_listener_logs', type: BOOL, omitEmpty: true },
      { name: 'Type', type: STRING, omitEmpty: true },
      { name: 'Path', type: STRING, omitEmpty: true },
      { name: 'JSONFormat', alias: 'json_format', type: STRING, omitEmpty: true },
      { name: 'TextFormat', alias: 'text_format', type: STRING, omitEmpty: true },
    ]),
    omitEmpty: true,
  },
  ENVOY_EXTENSIONS,
  {
    name: 'FailoverPolicy',
    alias: 'failover_policy',
    type: pointer([
      { name: 'Mode', type: STRING, omitEmpty: true },
      { name: 'Regions', type: STRINGS, omitEmpty: true },
    ]),
    omitEmpty: true,
  },
  {
    name: 'PrioritizeByLocality',
    alias: 'prioritize_by_locality',
    type: pointer([{ name: 'Mode', type: STRING, omitEmpty: true }]),
    omitEmpty: true,
  },
  META_FIELD,
];

function isValidConnectionBalance(s: string): boolean {
  return s === '' || s === 'exact_balance';
}

/** UpstreamConfig normalize: the protocol lower-cased, a negative timeout is none. */
function normalizeUpstream(u: GoStruct): void {
  u.Protocol = str(u, 'Protocol').toLowerCase();
  if ((u.ConnectTimeoutMs as number) < 0) u.ConnectTimeoutMs = 0;
}

/** UpstreamConfig validate, named (an override) or not (the defaults); the first problem or undefined. */
function upstreamError(u: GoStruct, named: boolean): string | undefined {
  if (named) {
    if (str(u, 'Name') === '') return 'Name is required';
    if (str(u, 'Name') === WILDCARD) return 'Wildcard name is not supported';
  } else if (str(u, 'Name') !== '') return 'Name must be empty';
  const problems = new Problems();
  const check = sub(u, 'PassiveHealthCheck');
  if (check !== undefined && (check.Interval as number) < 0)
    problems.add('passive health check interval cannot be negative');
  const limits = sub(u, 'Limits');
  if (limits !== undefined) {
    const negative = (k: string): boolean => typeof limits[k] === 'number' && (limits[k] as number) < 0;
    if (negative('MaxConnections')) problems.add('max connections cannot be negative');
    else if (negative('MaxPendingRequests')) problems.add('max pending requests cannot be negative');
    else if (negative('MaxConcurrentRequests')) problems.add('max concurrent requests cannot be negative');
  }
  const balance = str(u, 'BalanceOutboundConnections');
  if (!isValidConnectionBalance(balance)) problems.add(`invalid value for balance_outbound_connections: ${balance}`);
  return problems.text();
}

/** An upstream override's name as Consul prints it in errors (its PeeredServiceName). */
function upstreamName(u: GoStruct): string {
  const peer = str(u, 'Peer');
  const name = str(u, 'Name');
  return peer === '' ? `default/default/${name}` : `peer:${peer}/default/default/${name}`;
}

/** A hostname or IP, as validateEndpointAddress checks a destination address. */
function isEndpointAddress(address: string): boolean {
  if (isIp(address)) return true;
  if (address.includes('*')) return false;
  return isDomainName(address);
}

function isIp(s: string): boolean {
  if (/^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.test(s)) return s.split('.').every((p) => Number(p) <= 255);
  return s.includes(':') && /^[0-9a-fA-F:.]+$/.test(s);
}

/** miekg/dns IsDomainName: labels of 1-63 bytes, 255 in all; almost any byte is allowed. */
function isDomainName(s: string): boolean {
  if (s === '' || Buffer.byteLength(s) > 255) return false;
  const name = s.endsWith('.') ? s.slice(0, -1) : s;
  if (name === '') return s === '.';
  return name.split('.').every((label) => label.length > 0 && label.length <= 63);
}

export const serviceDefaults: KindSpec = {
  kind: SERVICE_DEFAULTS,
  fields: SERVICE_DEFAULTS_FIELDS,
  normalize(e) {
    e.Kind = SERVICE_DEFAULTS;
    e.Protocol = str(e, 'Protocol').toLowerCase();
    const upstreams = sub(e, 'UpstreamConfig');
    if (upstreams !== undefined) {
      for (const o of list(upstreams, 'Overrides')) normalizeUpstream(o);
      const defaults = sub(upstreams, 'Defaults');
      if (defaults !== undefined) normalizeUpstream(defaults);
    }
    return undefined;
  },
  validate(e) {
    const name = str(e, 'Name');
    if (name === '') return 'Name is required';
    if (name === WILDCARD) return 'service-defaults name must be the name of a service, and not a wildcard';
    const problems = new Problems();
    problems.addAll(metaProblems(e.Meta as Record<string, string> | undefined));
    const balance = str(e, 'BalanceInboundConnections');
    if (!isValidConnectionBalance(balance)) problems.add(`invalid value for balance_inbound_connections: ${balance}`);
    const upstreams = sub(e, 'UpstreamConfig');
    const destination = sub(e, 'Destination');
    if (upstreams !== undefined && destination !== undefined) {
      problems.add('UpstreamConfig and Destination are mutually exclusive for service defaults');
      return problems.text();
    }
    if (upstreams !== undefined) {
      for (const o of list(upstreams, 'Overrides')) {
        const err = upstreamError(o, true);
        if (err !== undefined) problems.add(`error in upstream override for ${upstreamName(o)}: ${err}`);
      }
      const defaults = sub(upstreams, 'Defaults');
      if (defaults !== undefined) {
        const err = upstreamError(defaults, false);
        if (err !== undefined) problems.add(`error in upstream defaults: ${err}`);
      }
    }
    if (destination !== undefined) {
      const addresses = strings(destination, 'Addresses');
      if (addresses.length === 0) problems.add('Destination must contain at least one valid address');
      const seen = new Set<string>();
      for (const address of addresses) {
        if (seen.has(address)) {
          problems.add(`Duplicate address '${address}' is not allowed`);
          continue;
        }
        seen.add(address);
        if (!isEndpointAddress(address))
          problems.add(
            `Destination address '${address}' is invalid Could not validate address ${address} as an IP or Hostname`,
          );
      }
      const port = destination.Port as number;
      if (port < 1 || port > 65535) problems.add(`Invalid Port number ${port}`);
    }
    return problems.text();
  },
  canRead: (name) => [{ resource: 'service', access: 'read', name }],
  canWrite: (e) => [{ resource: 'service', access: 'write', name: str(e, 'Name') }],
};

function invalidGlobalName(name: string): string {
  return `invalid name (${goQuote(name)}), only ${goQuote(PROXY_CONFIG_GLOBAL)} is supported`;
}

export const proxyDefaults: KindSpec = {
  kind: PROXY_DEFAULTS,
  fields: PROXY_DEFAULTS_FIELDS,
  normalize(e) {
    e.Kind = PROXY_DEFAULTS;
    const name = str(e, 'Name');
    // Checked here as well as in validate: a delete normalizes without validating.
    if (name !== '' && name !== PROXY_CONFIG_GLOBAL) return invalidGlobalName(name);
    e.Name = PROXY_CONFIG_GLOBAL;
    return undefined;
  },
  validate(e) {
    const name = str(e, 'Name');
    if (name !== PROXY_CONFIG_GLOBAL) return invalidGlobalName(name);
    return metaError(e.Meta as Record<string, string> | undefined);
  },
  canRead: () => [],
  canWrite: () => [{ resource: 'mesh', access: 'write' }],
};
