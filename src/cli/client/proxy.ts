// `svc-agent connect proxy`: the built-in proxy (src/proxy/), with Consul's flags. With
// -sidecar-for (or -proxy-id) it reads its sidecar registration from the agent and follows its
// changes; else -service, -service-addr, -listen and -upstream say what to serve. It runs until
// SIGINT or SIGTERM, then stops taking connections and gives the open ones a bounded time (-drain) to end.
import {
  configFromRegistration,
  PROXY_DEFAULTS,
  type ProxyConfig,
  type ProxyRegistration,
} from '../../proxy/config.js';
import type { Server } from 'node:http';
import { usageError } from '../usage-error.js';
import type { ApiClient } from './api.js';
import type { ClientCommand, Io } from './command.js';

/** How long open connections are given to end after SIGTERM. */
const DEFAULT_DRAIN_MS = 5_000;

export const proxyCommands: ClientCommand[] = [
  {
    name: 'connect proxy',
    synopsis:
      'Runs the built-in mesh proxy for a service (-sidecar-for ID, whose registration it follows, or -service with -listen)',
    argsUsage: '',
    arity: [0, 0],
    flags: {
      'sidecar-for': { kind: 'string', doc: 'The ID of the service whose sidecar registration this proxy serves.' },
      'proxy-id': { kind: 'string', doc: 'The ID of the connect-proxy registration this proxy serves.' },
      service: { kind: 'string', doc: "The service's name, without a registration (its leaf's)." },
      'service-addr': { kind: 'string', doc: 'host:port of the local application (with -service and -listen).' },
      listen: { kind: 'string', doc: 'host:port the public listener binds (with -service).' },
      upstream: { kind: 'list', doc: 'name:port, an upstream listener on 127.0.0.1 (with -service; repeatable).' },
      drain: { kind: 'int', doc: 'Milliseconds open connections are given to end after SIGTERM (default 5000).' },
      'metrics-addr': {
        kind: 'string',
        doc: 'host:port to serve Prometheus metrics on (GET /metrics): connections accepted, refused by reason, active, bytes, handshake and authorize latency.',
      },
      register: {
        kind: 'bool',
        doc: 'Register the proxy with the agent as a connect-proxy service (<service>-proxy, with a TTL check it keeps passing), removed when it stops (with -service and -listen).',
      },
      'register-id': { kind: 'string', doc: 'A suffix for the registered ID (<service>-proxy-<id>), to run several.' },
      'close-denied': {
        kind: 'bool',
        doc: 'Close an established inbound connection once the intentions deny its client (default true; -close-denied=false keeps it open, as Consul does).',
      },
    },
    async run({ api, flags, io }) {
      const { config, proxyId } = await proxyConfig(api, flags);
      const register = flags.register === true;
      // As Consul's: a registration of its own is for a proxy started without one.
      if (register && (proxyId !== undefined || config.publicListener === undefined))
        throw usageError('CLI_FLAG_MISSING', { detail: '-register goes with -service and -listen' });
      const drainMs = typeof flags.drain === 'number' ? flags.drain : DEFAULT_DRAIN_MS;
      // Loaded here: the other client commands start without the SDK and the proxy.
      const { ConnectService } = await import('../../sdk/index.js');
      const { ConnectProxy } = await import('../../proxy/proxy.js');
      const metricsAddr = stringFlag(flags, 'metrics-addr');
      const metrics =
        metricsAddr === undefined ? undefined : new (await import('../../proxy/metrics.js')).ProxyMetrics();
      const agent = {
        address: api.agent.address,
        tls: api.agent.tls,
        ...(api.agent.token === undefined ? {} : { token: api.agent.token }),
      };
      const serviceOptions = {
        ...agent,
        closeDenied: flags['close-denied'] !== false,
        ...(metrics === undefined ? {} : { timings: metrics.timings }),
        log: lineLogger(io),
      };
      const service = new ConnectService({ name: config.service, ...serviceOptions });
      // A new destination is served by a new service, counting on in the same stats.
      const serviceFor = (name: string) => new ConnectService({ name, ...serviceOptions, stats: service.stats });
      const proxy = new ConnectProxy(config, service, lineLogger(io), { drainMs, serviceFor });
      metrics?.count(proxy, service);
      let metricsServer: Server | undefined;
      try {
        if (metrics !== undefined && metricsAddr !== undefined) {
          const { host, port } = hostPort('metrics-addr', metricsAddr, 'host', 'port');
          metricsServer = await metrics.listen(port, host);
        }
        // The SDK's retries keep no process alive: this one waits for its first leaf.
        const waiting = setInterval(() => {}, 60_000);
        await proxy.start().finally(() => clearInterval(waiting));
      } catch (err) {
        metricsServer?.close();
        service.close();
        throw err;
      }
      const { followRegistration } = await import('../../proxy/registration-watch.js');
      const unfollow =
        proxyId === undefined
          ? () => {}
          : followRegistration(agent, proxyId, (next) => void proxy.apply(next), lineLogger(io));
      const registration =
        !register || config.publicListener === undefined
          ? undefined
          : new (await import('../../proxy/register.js')).SelfRegistration(
              {
                service: config.service,
                address: ANY_ADDRESS.has(config.publicListener.bindAddress) ? '' : config.publicListener.bindAddress,
                port: config.publicListener.bindPort,
                idSuffix: stringFlag(flags, 'register-id'),
              },
              agent,
              lineLogger(io),
            );
      await registration?.start();
      io.err(`==> svc-agent connect proxy for ${config.service} running\n`);
      const signal = await new Promise<string>((resolve) => {
        process.once('SIGINT', () => resolve('SIGINT'));
        process.once('SIGTERM', () => resolve('SIGTERM'));
      });
      io.err(`==> ${signal}: draining\n`);
      unfollow();
      await registration?.close();
      await proxy.close(drainMs);
      metricsServer?.close();
      return 0;
    },
  },
];

/** Listen addresses that name no one host: registered without an address, found at the node's. */
const ANY_ADDRESS: ReadonlySet<string> = new Set(['0.0.0.0', '::', '']);

/** What to serve, and the registration it came from (followed while the proxy runs). */
async function proxyConfig(
  api: ApiClient,
  flags: Readonly<Record<string, unknown>>,
): Promise<{ config: ProxyConfig; proxyId?: string }> {
  const sidecarFor = stringFlag(flags, 'sidecar-for');
  let proxyId = stringFlag(flags, 'proxy-id');
  if (sidecarFor !== undefined) {
    const services = await api.json<
      Record<string, { ID: string; Kind?: string; Proxy?: { DestinationServiceID?: string } }>
    >('GET', '/v1/agent/services', undefined, 'listing the agent services');
    const sidecars = Object.values(services).filter(
      (s) => s.Kind === 'connect-proxy' && s.Proxy?.DestinationServiceID === sidecarFor,
    );
    if (sidecars.length !== 1)
      throw usageError('CLI_FLAG_VALUE', {
        flag: 'sidecar-for',
        value: sidecarFor,
        reason:
          sidecars.length === 0
            ? 'no sidecar proxy is registered for it'
            : 'more than one sidecar proxy is registered for it: use -proxy-id',
      });
    proxyId = sidecars[0]?.ID;
  }
  if (proxyId !== undefined) {
    const reg = await api.json<ProxyRegistration>(
      'GET',
      `/v1/agent/service/${encodeURIComponent(proxyId)}`,
      undefined,
      'reading the proxy registration',
    );
    return { config: configFromRegistration(reg), proxyId };
  }
  const name = stringFlag(flags, 'service');
  if (name === undefined)
    throw usageError('CLI_FLAG_MISSING', { detail: 'one of -sidecar-for, -proxy-id or -service is required' });
  const listen = stringFlag(flags, 'listen');
  const local = stringFlag(flags, 'service-addr');
  if ((listen === undefined) !== (local === undefined))
    throw usageError('CLI_FLAG_MISSING', { detail: '-listen and -service-addr go together' });
  const upstreams = Array.isArray(flags.upstream) ? (flags.upstream as string[]) : [];
  const config: ProxyConfig = {
    service: name,
    publicListener:
      listen === undefined || local === undefined
        ? undefined
        : {
            ...hostPort('listen', listen, 'bindAddress', 'bindPort'),
            ...hostPort('service-addr', local, 'localServiceAddress', 'localServicePort'),
            localConnectTimeoutMs: PROXY_DEFAULTS.localConnectTimeoutMs,
            handshakeTimeoutMs: PROXY_DEFAULTS.handshakeTimeoutMs,
          },
    upstreams: upstreams.map((spec) => {
      const m = /^([^:]+):(\d+)$/.exec(spec);
      if (m === null)
        throw usageError('CLI_FLAG_VALUE', { flag: 'upstream', value: spec, reason: 'expected name:port' });
      return {
        destinationName: m[1] as string,
        localBindAddress: PROXY_DEFAULTS.upstreamBindAddress,
        localBindPort: Number(m[2]),
        connectTimeoutMs: PROXY_DEFAULTS.upstreamConnectTimeoutMs,
      };
    }),
  };
  return { config };
}

function hostPort<H extends string, P extends string>(
  flag: string,
  value: string,
  host: H,
  port: P,
): Record<H, string> & Record<P, number> {
  const m = /^(.*):(\d+)$/.exec(value);
  if (m === null) throw usageError('CLI_FLAG_VALUE', { flag, value, reason: 'expected host:port' });
  return { [host]: (m[1] ?? '').replace(/^\[|\]$/g, '') || '0.0.0.0', [port]: Number(m[2]) } as Record<H, string> &
    Record<P, number>;
}

function stringFlag(flags: Readonly<Record<string, unknown>>, name: string): string | undefined {
  const value = flags[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The proxy's lines on stderr, as `key=value` fields after the message. */
function lineLogger(io: Io): {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
} {
  const line = (level: string, fields: Record<string, unknown>, message: string): void =>
    io.err(
      `${new Date().toISOString()} [${level}]  proxy: ${message}${Object.entries(fields)
        .map(([k, v]) => ` ${k}=${String(v)}`)
        .join('')}\n`,
    );
  return { info: (f, m) => line('INFO', f, m), warn: (f, m) => line('WARN', f, m) };
}
