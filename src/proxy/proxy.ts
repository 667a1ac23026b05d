// The built-in proxy (Consul's connect/proxy): its public listener takes mTLS connections through
// the SDK's server (verified against the roots, authorized per connection) and pipes each to the
// local application; each upstream listener takes plain TCP on loopback and pipes it to a mesh
// connection the SDK dials. close() stops new connections and gives established ones a bounded
// time to end.
import {
  connect as netConnect,
  createServer as createNetServer,
  type Server as NetServer,
  type Socket,
} from 'node:net';
import type { Server as TlsServer, TLSSocket } from 'node:tls';
import type { ConnectService, SdkLogger } from '../sdk/index.js';
import type { ProxyConfig, UpstreamListener } from './config.js';

export interface ProxyStats {
  /** Connections piped to the local application, and those open now. */
  publicAccepted: number;
  /** The local application refused or did not accept within local_connect_timeout_ms. */
  localFailures: number;
  upstreamAccepted: number;
  /** An upstream connection the mesh did not take (no instance, refused, not the service). */
  upstreamFailures: number;
  active: number;
  bytesIn: number;
  bytesOut: number;
}

export class ConnectProxy {
  readonly stats: ProxyStats = {
    publicAccepted: 0,
    localFailures: 0,
    upstreamAccepted: 0,
    upstreamFailures: 0,
    active: 0,
    bytesIn: 0,
    bytesOut: 0,
  };
  private publicServer: TlsServer | undefined;
  private readonly upstreamServers: NetServer[] = [];
  private readonly open = new Set<Socket>();

  constructor(
    private readonly config: ProxyConfig,
    private readonly service: ConnectService,
    private readonly log: SdkLogger,
  ) {}

  /** Listens on the public and upstream addresses; rejects naming the first that cannot be bound. */
  async start(): Promise<void> {
    await this.service.ready;
    const pub = this.config.publicListener;
    if (pub !== undefined) {
      this.publicServer = await this.service.listen(pub.bindPort, pub.bindAddress, (socket) => this.toLocal(socket));
      this.log.info(
        { address: `${pub.bindAddress}:${pub.bindPort}`, service: this.config.service },
        'public listener started',
      );
    }
    for (const upstream of this.config.upstreams) {
      const server = createNetServer((socket) => this.toUpstream(socket, upstream));
      await listen(server, upstream.localBindPort, upstream.localBindAddress);
      this.upstreamServers.push(server);
      this.log.info(
        { address: `${upstream.localBindAddress}:${upstream.localBindPort}`, destination: upstream.destinationName },
        'upstream listener started',
      );
    }
  }

  /** Stops taking connections, then ends the open ones after `drainMs` at most. */
  async close(drainMs: number): Promise<void> {
    this.publicServer?.close();
    for (const server of this.upstreamServers) server.close();
    this.service.close();
    if (this.open.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, drainMs);
        const check = (): void => {
          if (this.open.size > 0) return;
          clearTimeout(timer);
          resolve();
        };
        for (const socket of this.open) socket.once('close', check);
      });
    }
    for (const socket of this.open) socket.destroy();
  }

  private toLocal(socket: TLSSocket): void {
    const pub = this.config.publicListener;
    if (pub === undefined) return;
    const local = netConnect({ host: pub.localServiceAddress, port: pub.localServicePort });
    local.setTimeout(pub.localConnectTimeoutMs, () =>
      local.destroy(new Error('the local application did not accept in time')),
    );
    local.once('connect', () => {
      local.setTimeout(0);
      this.stats.publicAccepted++;
      this.pipe(socket, local);
    });
    local.once('error', (err) => {
      this.stats.localFailures++;
      this.log.warn(
        { err: err.message, address: `${pub.localServiceAddress}:${pub.localServicePort}` },
        'the local application refused a connection',
      );
      socket.destroy();
    });
  }

  private toUpstream(socket: Socket, upstream: UpstreamListener): void {
    socket.pause();
    let done = false;
    const timer = setTimeout(() => {
      done = true;
      this.stats.upstreamFailures++;
      socket.destroy();
    }, upstream.connectTimeoutMs);
    this.service.dial(upstream.destinationName).then(
      (mesh) => {
        clearTimeout(timer);
        if (done || socket.destroyed) {
          mesh.destroy();
          return;
        }
        this.stats.upstreamAccepted++;
        this.pipe(socket, mesh);
        socket.resume();
      },
      (err: unknown) => {
        clearTimeout(timer);
        if (done) return;
        this.stats.upstreamFailures++;
        this.log.warn({ destination: upstream.destinationName, err: String(err) }, 'an upstream connection failed');
        socket.destroy();
      },
    );
  }

  /** Both ways, counting bytes; either side closing or failing ends both. */
  private pipe(inbound: Socket, outbound: Socket): void {
    this.stats.active++;
    this.open.add(inbound);
    inbound.on('data', (chunk: Buffer) => (this.stats.bytesIn += chunk.length));
    outbound.on('data', (chunk: Buffer) => (this.stats.bytesOut += chunk.length));
    inbound.pipe(outbound);
    outbound.pipe(inbound);
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      this.stats.active--;
      this.open.delete(inbound);
      inbound.destroy();
      outbound.destroy();
    };
    for (const side of [inbound, outbound]) {
      side.on('error', end);
      side.on('close', end);
    }
  }
}

function listen(server: NetServer, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
