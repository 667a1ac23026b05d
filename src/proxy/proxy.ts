// The built-in proxy (Consul's connect/proxy): its public listener takes mTLS connections through
// the SDK's server (verified against the roots, authorized per connection) and pipes each to the
// local application; each upstream listener takes plain TCP on loopback and pipes it to a mesh
// connection the SDK dials. apply() follows a changed configuration: listeners added are opened,
// removed or moved ones stop taking connections and their open ones are drained; close() drains all.
import {
  connect as netConnect,
  createServer as createNetServer,
  type Server as NetServer,
  type Socket,
} from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { ConnectService, SdkLogger } from '../sdk/index.js';
import type { ProxyConfig, PublicListener, UpstreamListener } from './config.js';

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

export interface ProxyOptions {
  /** How long the open connections of a listener removed by apply() are given to end. */
  readonly drainMs: number;
  /**
   * The service to be once the registration names another destination (DestinationServiceName):
   * its leaf, its authorize target. Without it such a change is logged and needs a restart.
   */
  readonly serviceFor?: (name: string) => ConnectService;
}

/** A listening server and the connections it piped that are still open. */
interface Listener {
  readonly server: NetServer;
  readonly open: Set<Socket>;
  /** What it was opened for: a change of it means a new listener. */
  readonly key: string;
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
  private publicListener: Listener | undefined;
  /** By local bind address and port; each connection reads its upstream's settings when it comes. */
  private readonly upstreams = new Map<string, Listener & { upstream: UpstreamListener }>();
  /** Listeners removed or closed, until their open connections end. */
  private readonly draining = new Set<Promise<void>>();
  /** apply() calls, one after another. */
  private applied: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private config: ProxyConfig,
    private service: ConnectService,
    private readonly log: SdkLogger,
    private readonly options: ProxyOptions = { drainMs: 5_000 },
  ) {}

  /** Listens on the public and upstream addresses; rejects naming the first that cannot be bound. */
  async start(): Promise<void> {
    await this.service.ready;
    await this.reconcile(this.config, true);
  }

  /**
   * Follows a changed configuration (the sidecar's registration changed): the local application's
   * address and timeouts take effect for new connections; a listener whose address changed is
   * bound again. A listener that cannot be bound is logged and left out; the others carry on.
   */
  apply(next: ProxyConfig): Promise<void> {
    this.applied = this.applied.then(() => this.reconcile(next, false));
    return this.applied;
  }

  /** Stops taking connections, then ends the open ones after `drainMs` at most. */
  async close(drainMs: number): Promise<void> {
    this.closed = true;
    await this.applied;
    if (this.publicListener !== undefined) void this.drain(this.publicListener, drainMs);
    for (const listener of this.upstreams.values()) void this.drain(listener, drainMs);
    this.publicListener = undefined;
    this.upstreams.clear();
    this.service.close();
    await Promise.all([...this.draining]);
  }

  private async reconcile(next: ProxyConfig, starting: boolean): Promise<void> {
    if (this.closed) return;
    const serving = next.service === this.config.service || (await this.becomeService(next.service));
    if (this.closed) return;
    const [was, now] = [this.config.publicListener, next.publicListener];
    if (was !== undefined && now !== undefined && localAddress(was) !== localAddress(now))
      this.log.info({ service: this.config.service, address: localAddress(now) }, 'the local application moved');
    this.config = { ...next, service: serving ? next.service : this.config.service };
    const bind = async (what: string, open: () => Promise<void>): Promise<void> => {
      try {
        await open();
      } catch (err) {
        if (starting) throw err;
        this.log.warn({ listener: what, err: err instanceof Error ? err.message : String(err) }, 'cannot listen');
      }
    };
    const pub = next.publicListener;
    const pubKey = pub === undefined ? '' : `${pub.bindAddress}:${pub.bindPort} handshake ${pub.handshakeTimeoutMs}`;
    if (this.publicListener !== undefined && this.publicListener.key !== pubKey) {
      void this.drain(this.publicListener, this.options.drainMs);
      this.publicListener = undefined;
      this.log.info({ service: this.config.service }, 'public listener closed');
    }
    if (pub !== undefined && this.publicListener === undefined)
      await bind(`${pub.bindAddress}:${pub.bindPort}`, () => this.openPublic(pub, pubKey));

    const wanted = new Map(next.upstreams.map((u) => [`${u.localBindAddress}:${u.localBindPort}`, u]));
    for (const [address, listener] of this.upstreams) {
      const upstream = wanted.get(address);
      if (upstream !== undefined) {
        listener.upstream = upstream;
        continue;
      }
      this.upstreams.delete(address);
      void this.drain(listener, this.options.drainMs);
      this.log.info({ address, destination: listener.upstream.destinationName }, 'upstream listener closed');
    }
    for (const [address, upstream] of wanted)
      if (!this.upstreams.has(address)) await bind(address, () => this.openUpstream(address, upstream));
  }

  /**
   * Serves as `name` from now on, once its leaf and roots are held: every listener was opened as the
   * old service (the public one presents its leaf and authorizes to it, upstream dials present it),
   * so each is drained and opened again; the old service goes once their connections have ended.
   * False, still serving the old one, when there is no serviceFor or the agent refuses the new one.
   */
  private async becomeService(name: string): Promise<boolean> {
    const fields = { service: this.config.service, registered: name };
    if (this.options.serviceFor === undefined) {
      this.log.warn(fields, 'the destination service changed: a proxy serves one service, restart it to follow');
      return false;
    }
    const next = this.options.serviceFor(name);
    try {
      await next.ready;
    } catch (err) {
      next.close();
      const why = { ...fields, err: err instanceof Error ? err.message : String(err) };
      this.log.warn(why, 'the destination service changed, but the proxy cannot serve it: serving the old one');
      return false;
    }
    const old = this.service;
    this.service = next;
    const listeners = [...(this.publicListener === undefined ? [] : [this.publicListener]), ...this.upstreams.values()];
    this.publicListener = undefined;
    this.upstreams.clear();
    const drained = listeners.map((listener) => this.drain(listener, this.options.drainMs));
    void Promise.all(drained).then(() => old.close());
    this.log.info(fields, 'the destination service changed: serving as the new one');
    return true;
  }

  private async openPublic(pub: PublicListener, key: string): Promise<void> {
    const open = new Set<Socket>();
    const server = await this.service.listen(pub.bindPort, pub.bindAddress, (socket) => this.toLocal(socket, open), {
      handshakeTimeoutMs: pub.handshakeTimeoutMs,
    });
    this.publicListener = { server, open, key };
    this.log.info(
      { address: `${pub.bindAddress}:${pub.bindPort}`, service: this.config.service },
      'public listener started',
    );
  }

  private async openUpstream(address: string, upstream: UpstreamListener): Promise<void> {
    const open = new Set<Socket>();
    const server = createNetServer();
    const listener = { server, open, key: address, upstream };
    server.on('connection', (socket: Socket) => this.toUpstream(socket, listener.upstream, open));
    await listen(server, upstream.localBindPort, upstream.localBindAddress);
    this.upstreams.set(address, listener);
    this.log.info({ address, destination: upstream.destinationName }, 'upstream listener started');
  }

  /** Stops `listener` taking connections and ends its open ones after `drainMs` at most. */
  private drain(listener: Listener, drainMs: number): Promise<void> {
    listener.server.close();
    const { open } = listener;
    if (open.size === 0) return Promise.resolve();
    const done = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, drainMs);
      const check = (): void => {
        if (open.size > 0) return;
        clearTimeout(timer);
        resolve();
      };
      for (const socket of open) socket.once('close', check);
    }).then(() => {
      for (const socket of open) socket.destroy();
      this.draining.delete(done);
    });
    this.draining.add(done);
    return done;
  }

  private toLocal(socket: TLSSocket, open: Set<Socket>): void {
    const pub = this.config.publicListener;
    if (pub === undefined) {
      socket.destroy();
      return;
    }
    const local = netConnect({ host: pub.localServiceAddress, port: pub.localServicePort });
    local.setTimeout(pub.localConnectTimeoutMs, () =>
      local.destroy(new Error('the local application did not accept in time')),
    );
    local.once('connect', () => {
      local.setTimeout(0);
      this.stats.publicAccepted++;
      this.pipe(socket, local, open);
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

  private toUpstream(socket: Socket, upstream: UpstreamListener, open: Set<Socket>): void {
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
        this.pipe(socket, mesh, open);
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
  private pipe(inbound: Socket, outbound: Socket, open: Set<Socket>): void {
    this.stats.active++;
    open.add(inbound);
    inbound.on('data', (chunk: Buffer) => (this.stats.bytesIn += chunk.length));
    outbound.on('data', (chunk: Buffer) => (this.stats.bytesOut += chunk.length));
    inbound.pipe(outbound);
    outbound.pipe(inbound);
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      this.stats.active--;
      open.delete(inbound);
      inbound.destroy();
      outbound.destroy();
    };
    for (const side of [inbound, outbound]) {
      side.on('error', end);
      side.on('close', end);
    }
  }
}

function localAddress(pub: PublicListener): string {
  return `${pub.localServiceAddress}:${pub.localServicePort}`;
}

/** Listens on `port` and `host`; rejects when it cannot. */
export function listen(server: NetServer, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
