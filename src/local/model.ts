// The agent's local services and checks as the domain holds them: Consul's ServiceDefinition and
// CheckType as registered, and the NodeService and HealthCheck the agent keeps for each.

export type HealthStatus = 'passing' | 'warning' | 'critical';
export const HEALTH_STATUSES: ReadonlySet<string> = new Set(['passing', 'warning', 'critical']);

/** Consul's service kinds; '' is a typical service. */
export type ServiceKind = string;
export const CONNECT_PROXY = 'connect-proxy';
export const SIDECAR_SUFFIX = '-sidecar-proxy';

export interface ServiceAddress {
  readonly address: string;
  readonly port: number;
}

export interface Weights {
  readonly passing: number;
  readonly warning: number;
}

export interface Upstream {
  readonly destinationType: string;
  readonly destinationNamespace: string;
  readonly destinationName: string;
  readonly datacenter: string;
  readonly localBindAddress: string;
  readonly localBindPort: number;
  readonly config: Readonly<Record<string, unknown>> | undefined;
}

export interface ProxyConfig {
  readonly destinationServiceName: string;
  readonly destinationServiceId: string;
  readonly localServiceAddress: string;
  readonly localServicePort: number;
  readonly mode: string;
  readonly config: Readonly<Record<string, unknown>> | undefined;
  readonly upstreams: readonly Upstream[];
}

/** Consul's CheckType: how a check runs. Durations in milliseconds, 0 when unset. */
export interface CheckSpec {
  readonly checkId: string;
  readonly name: string;
  readonly status: string;
  readonly notes: string;
  readonly scriptArgs: readonly string[];
  readonly http: string;
  readonly header: Readonly<Record<string, readonly string[]>>;
  readonly method: string;
  readonly body: string;
  readonly disableRedirects: boolean;
  readonly tcp: string;
  readonly udp: string;
  readonly h2ping: string;
  readonly grpc: string;
  readonly grpcUseTls: boolean;
  readonly osService: string;
  readonly dockerContainerId: string;
  readonly tlsServerName: string;
  readonly tlsSkipVerify: boolean;
  readonly aliasNode: string;
  readonly aliasService: string;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly ttlMs: number;
  readonly successBeforePassing: number;
  readonly failuresBeforeWarning: number;
  readonly failuresBeforeCritical: number;
  readonly deregisterCriticalServiceAfterMs: number;
  readonly outputMaxSize: number;
}

/** A standalone check registration (PUT /v1/agent/check/register, a config `check` block). */
export interface CheckDefinition extends CheckSpec {
  readonly serviceId: string;
}

export interface ServiceDefinition {
  readonly kind: ServiceKind;
  readonly id: string;
  readonly name: string;
  readonly tags: readonly string[];
  readonly address: string;
  readonly taggedAddresses: Readonly<Record<string, ServiceAddress>> | undefined;
  readonly meta: Readonly<Record<string, string>> | undefined;
  readonly port: number;
  readonly weights: Weights | undefined;
  readonly enableTagOverride: boolean;
  readonly proxy: ProxyConfig | undefined;
  readonly connectNative: boolean;
  readonly sidecarService: ServiceDefinition | undefined;
  readonly checks: readonly CheckSpec[];
}

/** A registered service (Consul's NodeService). */
export interface LocalService {
  readonly kind: ServiceKind;
  readonly id: string;
  readonly service: string;
  readonly tags: readonly string[];
  readonly address: string;
  readonly taggedAddresses: Readonly<Record<string, ServiceAddress>> | undefined;
  readonly meta: Readonly<Record<string, string>>;
  readonly port: number;
  readonly weights: Weights;
  readonly enableTagOverride: boolean;
  readonly proxy: ProxyConfig | undefined;
  readonly connectNative: boolean;
  /** The parent's ID for a sidecar registered through Connect.SidecarService (removed with it). */
  readonly sidecarOf: string | undefined;
  /** Where it came from: a config file's services are replaced on reload, the API's persist. */
  readonly source: RegistrationSource;
}

export type RegistrationSource = 'api' | 'config';

/** A check's kind as Consul names it in HealthCheck.Type. */
export type CheckType =
  'http' | 'tcp' | 'grpc' | 'ttl' | 'alias' | 'script' | 'udp' | 'h2ping' | 'docker' | 'os_service';

/** A registered check (Consul's HealthCheck) and the CheckSpec it runs by. */
export interface LocalCheck {
  readonly checkId: string;
  readonly name: string;
  readonly status: HealthStatus;
  readonly notes: string;
  readonly output: string;
  readonly serviceId: string;
  readonly serviceName: string;
  readonly serviceTags: readonly string[];
  /** 'maintenance' for the check service maintenance adds. */
  readonly type: CheckType | 'maintenance' | '';
  readonly spec: CheckSpec;
  readonly source: RegistrationSource;
}

/** Consul's CheckType.Type(). */
export function checkTypeOf(spec: CheckSpec): CheckType | '' {
  const interval = spec.intervalMs > 0;
  if (spec.grpc !== '' && interval) return 'grpc';
  if (spec.http !== '' && interval) return 'http';
  if (spec.ttlMs > 0) return 'ttl';
  if (spec.tcp !== '' && interval) return 'tcp';
  if (spec.udp !== '' && interval) return 'udp';
  if (spec.aliasNode !== '' || spec.aliasService !== '') return 'alias';
  if (spec.scriptArgs.length > 0 && spec.dockerContainerId !== '' && interval) return 'docker';
  if (spec.scriptArgs.length > 0 && interval) return 'script';
  if (spec.h2ping !== '' && interval) return 'h2ping';
  if (spec.osService !== '' && interval) return 'os_service';
  return '';
}

/** Consul's agent/checks DefaultBufSize: outputs are cut to 4 KiB unless the check says otherwise. */
export const DEFAULT_OUTPUT_MAX_SIZE = 4 * 1024;
