// What the built-in proxy serves: a public listener (mTLS from other services' proxies, to the
// local application) and upstream listeners (plain TCP on loopback, to other services through the
// mesh). From a sidecar registration (Consul's -sidecar-for) or from flags; Consul's defaults.

export interface PublicListener {
  readonly bindAddress: string;
  readonly bindPort: number;
  readonly localServiceAddress: string;
  readonly localServicePort: number;
  /** Consul's local_connect_timeout_ms: how long the local application may take to accept. */
  readonly localConnectTimeoutMs: number;
  /** Consul's handshake_timeout_ms: a client that has not finished its TLS handshake by then is cut. */
  readonly handshakeTimeoutMs: number;
}

export interface UpstreamListener {
  readonly destinationName: string;
  readonly localBindAddress: string;
  readonly localBindPort: number;
  readonly connectTimeoutMs: number;
  /** The upstream's protocol (Config `protocol`, else the central defaults'); the proxy carries bytes either way. */
  readonly protocol?: string;
}

export interface ProxyConfig {
  /** The service the proxy stands for: its leaf is this service's, inbound connections are authorized to it. */
  readonly service: string;
  readonly publicListener: PublicListener | undefined;
  readonly upstreams: readonly UpstreamListener[];
  /** The service's protocol (Config `protocol`, else the central defaults'); the proxy carries bytes either way. */
  readonly protocol?: string;
}

/** Consul's connect/proxy defaults. */
export const PROXY_DEFAULTS = {
  bindAddress: '0.0.0.0',
  localServiceAddress: '127.0.0.1',
  localConnectTimeoutMs: 1_000,
  handshakeTimeoutMs: 10_000,
  upstreamBindAddress: '127.0.0.1',
  upstreamConnectTimeoutMs: 10_000,
  protocol: 'tcp',
} as const;

/** The registration of a connect-proxy as /v1/agent/service/:id answers it (the fields the proxy reads). */
export interface ProxyRegistration {
  readonly Port: number;
  readonly Address?: string;
  readonly Proxy: {
    readonly DestinationServiceName: string;
    readonly LocalServiceAddress?: string;
    readonly LocalServicePort?: number;
    readonly Config?: Readonly<Record<string, unknown>> | null;
    readonly Upstreams?:
      | readonly {
          readonly DestinationType?: string;
          readonly DestinationName: string;
          readonly LocalBindAddress?: string;
          readonly LocalBindPort: number;
          readonly Config?: Readonly<Record<string, unknown>> | null;
        }[]
      | null;
  };
}

/** A sidecar's registration read as Consul's proxy reads it (Config keys bind_address, bind_port, ...). */
export function configFromRegistration(reg: ProxyRegistration): ProxyConfig {
  const config = reg.Proxy.Config ?? {};
  const local = reg.Proxy.LocalServicePort ?? 0;
  return {
    service: reg.Proxy.DestinationServiceName,
    publicListener:
      local === 0
        ? undefined
        : {
            bindAddress: text(config['bind_address']) ?? PROXY_DEFAULTS.bindAddress,
            bindPort: number(config['bind_port']) ?? reg.Port,
            localServiceAddress: reg.Proxy.LocalServiceAddress || PROXY_DEFAULTS.localServiceAddress,
            localServicePort: local,
            localConnectTimeoutMs: number(config['local_connect_timeout_ms']) ?? PROXY_DEFAULTS.localConnectTimeoutMs,
            handshakeTimeoutMs: number(config['handshake_timeout_ms']) ?? PROXY_DEFAULTS.handshakeTimeoutMs,
          },
    upstreams: (reg.Proxy.Upstreams ?? [])
      .filter((u) => (u.DestinationType ?? 'service') === 'service')
      .map((u) => ({
        destinationName: u.DestinationName,
        localBindAddress: u.LocalBindAddress || PROXY_DEFAULTS.upstreamBindAddress,
        localBindPort: u.LocalBindPort,
        connectTimeoutMs: number(u.Config?.['connect_timeout_ms']) ?? PROXY_DEFAULTS.upstreamConnectTimeoutMs,
        protocol: text(u.Config?.['protocol']) ?? PROXY_DEFAULTS.protocol,
      })),
    protocol: text(config['protocol']) ?? PROXY_DEFAULTS.protocol,
  };
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** A number, or a numeric string (HCL and JSON registrations give either). */
function number(value: unknown): number | undefined {
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
}
