// Central configuration for the built-in proxy: the proxy-defaults `global` entry and its
// service's service-defaults, merged under the registration as Consul resolves a proxy's service
// config (ComputeResolvedServiceConfig, then MergeServiceConfig): the defaults' Config, the
// service's protocol and local timeouts, and for each upstream the UpstreamConfig defaults then its
// override; every key the registration sets itself wins. Read with /v1/config blocking queries,
// a missing entry (404) being no entry (docs/decisions.md#config-entries).
import type { AgentClient } from '../sdk/agent-client.js';
import { pauseAfterFailure, type Unwatch } from '../sdk/blocking-watch.js';
import type { ProxyRegistration } from './config.js';

/** The fields of the entries the proxy reads (the API's JSON). */
export interface ProxyDefaultsEntry {
  readonly Config?: Readonly<Record<string, unknown>> | null;
}

export interface UpstreamConfigJson {
  readonly Name?: string;
  readonly Protocol?: string;
  readonly ConnectTimeoutMs?: number;
}

export interface ServiceDefaultsEntry {
  readonly Protocol?: string;
  readonly LocalConnectTimeoutMs?: number;
  readonly LocalRequestTimeoutMs?: number;
  readonly UpstreamConfig?: {
    readonly Defaults?: UpstreamConfigJson;
    readonly Overrides?: readonly UpstreamConfigJson[];
  };
}

export interface CentralConfig {
  readonly proxyDefaults: ProxyDefaultsEntry | undefined;
  readonly serviceDefaults: ServiceDefaultsEntry | undefined;
}

/** The registration with the central defaults merged under its own Proxy.Config and upstream Configs. */
export function withCentralConfig(reg: ProxyRegistration, central: CentralConfig): ProxyRegistration {
  const service = central.serviceDefaults;
  const resolved: Record<string, unknown> = { ...(central.proxyDefaults?.Config ?? {}) };
  const globalProtocol = typeof resolved.protocol === 'string' ? resolved.protocol : undefined;
  if (service?.Protocol) resolved.protocol = service.Protocol;
  if (service?.LocalConnectTimeoutMs) resolved.local_connect_timeout_ms = service.LocalConnectTimeoutMs;
  if (service?.LocalRequestTimeoutMs) resolved.local_request_timeout_ms = service.LocalRequestTimeoutMs;
  const upstreams = reg.Proxy.Upstreams?.map((u) => {
    const config: Record<string, unknown> = {};
    if (globalProtocol !== undefined) config.protocol = globalProtocol;
    mergeUpstream(config, service?.UpstreamConfig?.Defaults);
    mergeUpstream(
      config,
      service?.UpstreamConfig?.Overrides?.find((o) => o.Name === u.DestinationName),
    );
    return { ...u, Config: { ...config, ...(u.Config ?? {}) } };
  });
  return {
    ...reg,
    Proxy: {
      ...reg.Proxy,
      Config: { ...resolved, ...(reg.Proxy.Config ?? {}) },
      ...(upstreams === undefined ? {} : { Upstreams: upstreams }),
    },
  };
}

/** UpstreamConfig.MergeInto, for the keys the proxy reads: only the ones set. */
function mergeUpstream(into: Record<string, unknown>, from: UpstreamConfigJson | undefined): void {
  if (from === undefined) return;
  if (from.Protocol) into.protocol = from.Protocol;
  if (from.ConnectTimeoutMs) into.connect_timeout_ms = from.ConnectTimeoutMs;
}

/**
 * Follows one config entry with blocking reads: `take` gets the entry, or undefined while there is
 * none, at first and at each change; a failed read is handed to `onError` and read again later.
 */
export function watchEntry(
  client: AgentClient,
  path: string,
  take: (entry: unknown) => void,
  onError: (err: Error) => void,
): Unwatch {
  const abort = new AbortController();
  let index = 0;
  let failures = 0;
  const loop = async (): Promise<void> => {
    while (!abort.signal.aborted) {
      try {
        const query = index === 0 ? '' : `?index=${index}&wait=5m`;
        const res = await client.call('GET', `${path}${query}`, undefined, abort.signal);
        if (res.status !== 200 && res.status !== 404)
          throw new Error(`${path} answered ${res.status}: ${res.body.trim()}`);
        failures = 0;
        if (res.index !== index || index === 0) take(res.status === 404 ? undefined : JSON.parse(res.body));
        // An index that went backwards (a restarted agent) is followed from the answer.
        index = res.index > 0 ? res.index : 0;
      } catch (err) {
        if (abort.signal.aborted) return;
        onError(err instanceof Error ? err : new Error(String(err)));
        index = 0;
        await pauseAfterFailure(failures++);
      }
    }
  };
  void loop();
  return () => abort.abort();
}
