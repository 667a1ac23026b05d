// The built-in proxy's central configuration (src/proxy/central-config.ts): proxy-defaults and the
// service's service-defaults merged under its registration as Consul resolves a proxy's service
// config, the registration's own keys winning; read as the proxy reads its config.
import { describe, expect, it } from 'vitest';
import { withCentralConfig } from '../../../src/proxy/central-config.js';
import { configFromRegistration, type ProxyRegistration } from '../../../src/proxy/config.js';

const registration = (
  config?: Record<string, unknown>,
  upstreamConfig?: Record<string, unknown>,
): ProxyRegistration => ({
  Port: 21000,
  Proxy: {
    DestinationServiceName: 'web',
    LocalServicePort: 8080,
    ...(config === undefined ? {} : { Config: config }),
    Upstreams: [
      {
        DestinationName: 'db',
        LocalBindPort: 9191,
        ...(upstreamConfig === undefined ? {} : { Config: upstreamConfig }),
      },
      { DestinationName: 'cache', LocalBindPort: 9192 },
    ],
  },
});

describe('central config for the built-in proxy', () => {
  it('without entries, the proxy keeps Consul defaults', () => {
    const config = configFromRegistration(
      withCentralConfig(registration(), { proxyDefaults: undefined, serviceDefaults: undefined }),
    );
    expect(config.protocol).toBe('tcp');
    expect(config.publicListener).toMatchObject({ localConnectTimeoutMs: 1000, handshakeTimeoutMs: 10000 });
    expect(config.upstreams.map((u) => [u.destinationName, u.connectTimeoutMs, u.protocol])).toEqual([
      ['db', 10000, 'tcp'],
      ['cache', 10000, 'tcp'],
    ]);
  });

  it('takes protocol and timeouts from proxy-defaults, the service protocol and upstream defaults from service-defaults', () => {
    const config = configFromRegistration(
      withCentralConfig(registration(), {
        proxyDefaults: { Config: { protocol: 'http', local_connect_timeout_ms: 3000, handshake_timeout_ms: 4000 } },
        serviceDefaults: {
          Protocol: 'grpc',
          UpstreamConfig: {
            Defaults: { ConnectTimeoutMs: 2500 },
            Overrides: [{ Name: 'db', ConnectTimeoutMs: 700, Protocol: 'http2' }],
          },
        },
      }),
    );
    expect(config.protocol).toBe('grpc');
    expect(config.publicListener).toMatchObject({ localConnectTimeoutMs: 3000, handshakeTimeoutMs: 4000 });
    expect(config.upstreams.map((u) => [u.destinationName, u.connectTimeoutMs, u.protocol])).toEqual([
      ['db', 700, 'http2'],
      ['cache', 2500, 'http'],
    ]);
  });

  it("the registration's own Proxy.Config and upstream Config win, and service-defaults' local timeout beats proxy-defaults'", () => {
    const config = configFromRegistration(
      withCentralConfig(registration({ handshake_timeout_ms: 1500 }, { connect_timeout_ms: 333 }), {
        proxyDefaults: { Config: { local_connect_timeout_ms: 3000, handshake_timeout_ms: 4000 } },
        serviceDefaults: { LocalConnectTimeoutMs: 5000, UpstreamConfig: { Defaults: { ConnectTimeoutMs: 2500 } } },
      }),
    );
    expect(config.publicListener).toMatchObject({ localConnectTimeoutMs: 5000, handshakeTimeoutMs: 1500 });
    expect(config.upstreams.map((u) => u.connectTimeoutMs)).toEqual([333, 2500]);
  });
});
