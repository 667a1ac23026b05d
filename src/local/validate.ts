// Consul's rules for a service registration and a check type, with its texts: what
// AgentRegisterService, NodeService.Validate, ValidateWeights, validateMetadata and
// CheckType.Validate refuse. Each raises a code of src/core/error-catalogue.ts.
import { agentError, type AgentError } from '../core/errors.js';
import { checkTypeOf, CONNECT_PROXY, HEALTH_STATUSES, type CheckSpec, type ServiceDefinition } from './model.js';

/** Throws the first rule the definition breaks, in Consul's order. */
export function validateService(def: ServiceDefinition): void {
  if (def.name === '') throw agentError('SERVICE_MISSING_NAME');
  if (isAnyAddress(def.address)) throw agentError('SERVICE_INVALID_ADDRESS');
  if (def.weights !== undefined) {
    const problem = weightsProblem(def.weights.passing, def.weights.warning);
    if (problem !== undefined) throw agentError('SERVICE_INVALID_WEIGHTS', { detail: problem });
  }
  const metaError = metaProblem(def.meta ?? {});
  if (metaError !== undefined) throw agentError('SERVICE_INVALID_META', { detail: metaError });
  const problems = serviceProblems(def);
  if (problems.length > 0) throw agentError('SERVICE_VALIDATION', { detail: multiError(problems) });
  for (const check of def.checks) checkOrThrow(check, (detail) => agentError('CHECK_INVALID', { detail }));
  const sidecar = def.sidecarService;
  if (sidecar !== undefined)
    for (const check of sidecar.checks)
      checkOrThrow(check, (detail) => agentError('SERVICE_SIDECAR_CHECK', { detail }));
}

function checkOrThrow(check: CheckSpec, wrap: (detail: string) => AgentError): void {
  const problem = checkProblem(check);
  if (problem !== undefined) throw wrap(problem);
  if (check.status !== '' && !HEALTH_STATUSES.has(check.status)) throw agentError('SERVICE_CHECK_STATUS');
}

/** Consul's CheckType.Validate; undefined when the check is sound. */
export function checkProblem(c: CheckSpec): string | undefined {
  const alias = c.aliasNode !== '' || c.aliasService !== '';
  const intervalCheck =
    c.scriptArgs.length > 0 || c.http !== '' || c.tcp !== '' || c.udp !== '' || c.grpc !== '' || c.h2ping !== '';
  const interval = intervalCheck || c.osService !== '';
  if (c.intervalMs > 0 && c.ttlMs > 0) return 'Interval and TTL cannot both be specified';
  if (interval && c.intervalMs <= 0)
    return 'Interval must be > 0 for Script, HTTP, H2PING, TCP, UDP or OSService checks';
  if (interval && alias) return 'Interval cannot be set for Alias checks';
  if (alias && c.ttlMs > 0) return 'TTL must be not be set for Alias checks';
  if (!interval && !alias && c.ttlMs <= 0) return 'TTL must be > 0 for TTL checks';
  if (c.outputMaxSize < 0) return 'MaxOutputMaxSize must be positive';
  if (c.failuresBeforeWarning > c.failuresBeforeCritical) {
    return "FailuresBeforeWarning can't be higher than FailuresBeforeCritical";
  }
  return undefined;
}

/** The check kinds this agent runs; a sound check of another kind is refused by name. */
export function refuseUnrunnable(spec: CheckSpec): void {
  const type = checkTypeOf(spec);
  if (type === 'script' || type === 'docker') throw agentError('CHECK_SCRIPTS_DISABLED');
  if (type === 'udp' || type === 'h2ping' || type === 'os_service') throw agentError('CHECK_UNSUPPORTED', { type });
}

function serviceProblems(def: ServiceDefinition): string[] {
  const problems: string[] = [];
  if (def.kind === CONNECT_PROXY) {
    const dest = def.proxy?.destinationServiceName ?? '';
    if (dest === '') problems.push('Proxy.DestinationServiceName must be non-empty for Connect proxy services');
    else if (dest === '*')
      problems.push('Proxy.DestinationServiceName must not be a wildcard for Connect proxy services');
    if (def.port === 0) problems.push('Port must be set for a Connect proxy');
    if (def.connectNative) problems.push('A Proxy cannot also be Connect Native, only typical services');
  }
  const sidecar = def.sidecarService;
  if (sidecar !== undefined) {
    if (sidecar.id !== '') problems.push('A SidecarService cannot specify an ID');
    if (sidecar.sidecarService !== undefined) problems.push('A SidecarService cannot have a nested SidecarService');
  }
  return problems;
}

function weightsProblem(passing: number, warning: number): string | undefined {
  if (passing <= 0) return 'Passing must be greater than 0';
  if (warning < 0) return 'Warning must be greater or equal than 0';
  return undefined;
}

const META_MAX_PAIRS = 64;
const META_KEY_MAX = 128;
const META_VALUE_MAX = 512;
const META_KEY = /^[a-zA-Z0-9_-]+$/;

/** Consul's validateMetadata for a service; the `consul-` prefix is reserved. */
export function metaProblem(meta: Readonly<Record<string, string>>): string | undefined {
  const entries = Object.entries(meta);
  if (entries.length > META_MAX_PAIRS)
    return `Node metadata cannot contain more than ${META_MAX_PAIRS} key/value pairs`;
  for (const [key, value] of entries) {
    const problem = metaPairProblem(key, value);
    if (problem !== undefined) return `Couldn't load metadata pair('${key}', '${value}'): ${problem}`;
  }
  return undefined;
}

function metaPairProblem(key: string, value: string): string | undefined {
  if (key === '') return 'Key cannot be blank';
  if (!META_KEY.test(key)) return 'Key contains invalid characters';
  if (key.length > META_KEY_MAX) return `Key is too long (limit: ${META_KEY_MAX} characters)`;
  if (key.startsWith('consul-')) return "Key prefix 'consul-' is reserved for internal use";
  if (value.length > META_VALUE_MAX) return `Value is too long (limit: ${META_VALUE_MAX} characters)`;
  return undefined;
}

function isAnyAddress(address: string): boolean {
  return address === '0.0.0.0' || address === '::' || address === '[::]';
}

/** hashicorp/go-multierror's text, which Consul's "Validation failed" carries. */
function multiError(problems: readonly string[]): string {
  const n = problems.length;
  return `${n} error${n === 1 ? '' : 's'} occurred:\n${problems.map((p) => `\t* ${p}`).join('\n')}\n\n`;
}
