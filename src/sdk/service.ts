// A Connect-native service: its leaf and the roots kept current from the agent, a TLS server that
// hands the application only connections whose client certificate verifies against the roots and
// that authorize allows, and a dialer that reaches another service's passing instance and checks
// that the server is that service (its URI SAN). New connections take the current leaf and every
// root (both roots during a rotation); established ones are left alone. With the agent gone, the
// held leaf and roots keep serving until they expire, said once, and once more when it is back.
import {
  connect as tlsConnect,
  createServer,
  type PeerCertificate,
  type SecureContextOptions,
  type Server,
  type TLSSocket,
} from 'node:tls';
import { Agent as HttpAgent } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { parseSpiffeId } from '../connect/spiffe.js';
import { InProcessMeshSource, type EmbeddedAgent } from './in-process-source.js';
import { HttpMeshSource, type Instance, type Leaf, type MeshSource, type Roots } from './mesh-source.js';
import type { AgentAddress } from './agent-client.js';
import { AgentAnswerError } from './blocking-watch.js';

export interface SdkLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

const SILENT: SdkLogger = { info: () => {}, warn: () => {} };

export interface ConnectServiceOptions extends AgentAddress {
  /** The service's name: the leaf is this service's, and inbound connections are authorized to it. */
  readonly name: string;
  readonly log?: SdkLogger;
  /**
   * An agent embedded in this process (createAgent()): leaf, roots, authorize and instances are
   * read from it with no HTTP request, as `token`'s (ACLs as over HTTP). Else its HTTP API at `address`.
   */
  readonly agent?: EmbeddedAgent;
  /** Where leaf, roots, authorize and instances come from, in place of either (tests, other transports). */
  readonly source?: MeshSource;
  /** A client that has not finished its TLS handshake by then is cut (Consul's handshake_timeout_ms). */
  readonly handshakeTimeoutMs?: number;
  /**
   * Closes an established inbound connection once the intentions turn to deny its client (asked
   * again after each change of the service's intentions); default true. Consul's proxy leaves it open.
   */
  readonly closeDenied?: boolean;
  /** Told how long each inbound handshake and each authorize took (the proxy's metrics). */
  readonly timings?: ServiceTimings;
  /** Counts to add to, in place of new ones: another service's, whose counting this one carries on. */
  readonly stats?: ServiceStats;
}

export interface ServiceTimings {
  /** From the TCP connection to its finished TLS handshake (handshakes that fail are counted in stats.refused). */
  handshake(seconds: number): void;
  /** Authorize asked for an inbound connection (answered from what is held, or by the agent). */
  authorize(seconds: number): void;
}

/** One server's own settings, over the service's. */
export interface ServerOptions {
  /** In place of the service's handshakeTimeoutMs. */
  readonly handshakeTimeoutMs?: number;
}

/** Why an inbound connection was refused, counted in `stats.refused`. */
export type RefusalReason = 'handshake' | 'no-identity' | 'trust-domain' | 'denied' | 'authorize-failed';

export interface ServiceStats {
  accepted: number;
  readonly refused: Record<RefusalReason, number>;
  dialed: number;
  dialFailures: number;
  /** Established connections closed because the intentions turned to deny their client. */
  closedOnDeny: number;
}

const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;

/** Node's codes for an agent certificate that cannot be verified, or a client certificate refused. */
const TLS_SETTINGS =
  /^(?:ERR_SSL_|ERR_TLS_CERT_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|UNABLE_TO_)/;

/** Why a service could not start, in words that say what to fix. */
function startError(service: string, err: Error): Error {
  const why =
    err instanceof AgentAnswerError
      ? `the agent refused ${service}'s leaf certificate or roots (the token needs service:write on ${service})`
      : "the agent's certificate cannot be verified, or it refused this client's";
  return new Error(`${why}: ${err.message}`, { cause: err });
}

/** Whether a failed read is the agent's refusal or a certificate problem: waiting will not mend it. */
function settingsToFix(err: Error): boolean {
  if (err instanceof AgentAnswerError) return err.status >= 400 && err.status < 500;
  const code = (err as NodeJS.ErrnoException).code;
  return typeof code === 'string' && TLS_SETTINGS.test(code);
}

export class ConnectService {
  /**
   * Resolves once the first leaf and roots are held: before that no connection is served or
   * dialled. Rejects when, before that, the agent refuses them (a 4xx: the token may not write the
   * service) or its certificate cannot be verified: settings to fix, not an outage to wait out.
   * While the agent cannot be reached it waits, trying again.
   */
  readonly ready: Promise<void>;
  readonly stats: ServiceStats;
  private readonly source: MeshSource;
  private readonly log: SdkLogger;
  private leaf: Leaf | undefined;
  private roots: Roots | undefined;
  private readonly servers = new Set<Server>();
  /** Admitted inbound connections by their client's SPIFFE ID, asked again when the intentions change. */
  private readonly live = new Map<string, { serial: string; sockets: Set<TLSSocket> }>();
  private readonly unwatch: (() => void)[] = [];
  private unreachable = false;
  private closed = false;

  constructor(private readonly options: ConnectServiceOptions) {
    this.source =
      options.source ??
      (options.agent === undefined
        ? new HttpMeshSource(options)
        : new InProcessMeshSource(options.agent, options.token));
    this.log = options.log ?? SILENT;
    this.stats = options.stats ?? {
      accepted: 0,
      refused: { handshake: 0, 'no-identity': 0, 'trust-domain': 0, denied: 0, 'authorize-failed': 0 },
      dialed: 0,
      dialFailures: 0,
      closedOnDeny: 0,
    };
    let becameReady!: () => void;
    let cannotStart!: (err: Error) => void;
    this.ready = new Promise((resolve, reject) => ((becameReady = resolve), (cannotStart = reject)));
    // Handled here too: a user who never awaits ready must not get an unhandled rejection.
    this.ready.catch(() => {});
    const changed = (): void => {
      this.reached();
      if (this.leaf === undefined || this.roots === undefined) return;
      becameReady();
      for (const server of this.servers) server.setSecureContext(this.contextOptions());
    };
    const failed = (err: Error): void => {
      const starting = this.leaf === undefined || this.roots === undefined;
      if (starting && settingsToFix(err)) return cannotStart(startError(options.name, err));
      if (this.unreachable) return;
      this.unreachable = true;
      this.log.warn(
        { service: options.name, err: err.message },
        starting
          ? 'the agent did not answer: waiting for the first leaf and roots'
          : 'the agent did not answer: serving with the leaf and roots held until they expire',
      );
    };
    this.unwatch.push(
      this.source.watchLeaf(options.name, (leaf) => ((this.leaf = leaf), changed()), failed),
      this.source.watchRoots((roots) => ((this.roots = roots), changed()), failed),
    );
    if (options.closeDenied !== false)
      this.unwatch.push(this.source.watchIntentions(options.name, () => void this.recheckLive()));
  }

  /** The certificate, key and roots new connections use, as tls options. */
  contextOptions(): SecureContextOptions {
    const { leaf, roots } = this.current();
    return { key: leaf.keyPem, cert: leaf.certPem, ca: [...roots.pems] };
  }

  /**
   * A TLS server for the service's inbound connections: `onConnection` gets a socket only once its
   * client's chain verified against the roots and authorize allowed its SPIFFE ID; any other is
   * destroyed before the application reads a byte, its reason counted and logged.
   */
  createServer(onConnection: (socket: TLSSocket, client: string) => void, options: ServerOptions = {}): Server {
    const server = createServer({
      ...this.contextOptions(),
      requestCert: true,
      rejectUnauthorized: true,
      handshakeTimeout: options.handshakeTimeoutMs ?? this.options.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
    });
    const timings = this.options.timings;
    if (timings !== undefined) timeHandshakes(server, timings);
    server.on('secureConnection', (socket: TLSSocket) => void this.admit(socket, onConnection));
    // Node reports a handshake that timed out or failed but leaves the socket open: it is closed here.
    server.on('tlsClientError', (err: Error, socket: TLSSocket) => {
      socket.destroy();
      this.refuse('handshake', { err: err.message });
    });
    server.on('close', () => this.servers.delete(server));
    this.servers.add(server);
    return server;
  }

  /** createServer, listening on `port` (and `host`); resolves once it listens. */
  async listen(
    port: number,
    host: string,
    onConnection: (socket: TLSSocket, client: string) => void,
    options: ServerOptions = {},
  ): Promise<Server> {
    await this.ready;
    const server = this.createServer(onConnection, options);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return server;
  }

  /**
   * A mesh connection to a passing instance of `service`, tried in turn from a random one: this
   * service's leaf presented, the server's chain verified against the roots and its URI SAN
   * required to name `service` in this trust domain.
   */
  async dial(service: string): Promise<TLSSocket> {
    await this.ready;
    const instances = await this.source.instances(service);
    if (instances.length === 0) throw new Error(`no passing instance of ${service} accepts mesh connections`);
    const first = Math.floor(Math.random() * instances.length);
    let failure: unknown;
    for (let i = 0; i < instances.length; i++) {
      const instance = instances[(first + i) % instances.length] as Instance;
      try {
        const socket = await this.connectTo(instance, service);
        this.stats.dialed++;
        return socket;
      } catch (err) {
        this.stats.dialFailures++;
        failure = err;
      }
    }
    throw new Error(`no instance of ${service} took the connection: ${String(failure)}`, { cause: failure });
  }

  /**
   * An http.Agent whose connections are mesh connections to `service` (dial), for node:http
   * clients: `http.request({ agent: web.httpAgent('db'), path: '/' })`. The request's host and
   * port are not used: the instance is picked from the catalog. On the server side, hand each
   * admitted socket to an http.Server: `db.createServer((s) => httpServer.emit('connection', s))`.
   */
  httpAgent(service: string): HttpAgent {
    const dial = (): Promise<TLSSocket> => this.dial(service);
    return new (class MeshAgent extends HttpAgent {
      override createConnection(_options: unknown, done: (err: Error | null, socket?: Duplex) => void): undefined {
        dial().then(
          (socket) => done(null, socket),
          (err: unknown) => done(err instanceof Error ? err : new Error(String(err))),
        );
        return undefined;
      }
    })({ keepAlive: true });
  }

  /** Stops the watches and the servers made here (their open connections are the application's). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const stop of this.unwatch) stop();
    for (const server of this.servers) server.close();
    this.source.close();
  }

  private connectTo(instance: Instance, service: string): Promise<TLSSocket> {
    const { roots } = this.current();
    return new Promise((resolve, reject) => {
      const socket = tlsConnect({
        host: instance.address,
        port: instance.port,
        ...this.contextOptions(),
        checkServerIdentity: (_host, cert) => serverIdentityProblem(cert, service, roots.trustDomain),
      });
      socket.once('secureConnect', () => {
        socket.off('error', reject);
        resolve(socket);
      });
      socket.once('error', reject);
    });
  }

  private async admit(socket: TLSSocket, onConnection: (socket: TLSSocket, client: string) => void): Promise<void> {
    // The X509Certificate reads its fields on demand: getPeerCertificate() would build them all.
    const cert = socket.getPeerX509Certificate();
    const uri = cert === undefined ? undefined : uriSan(cert.subjectAltName);
    if (uri === undefined || cert === undefined) {
      socket.destroy();
      this.refuse('no-identity', {});
      return;
    }
    // Authorize, as Consul's, does not look at the trust domain; a leaf of another mesh's CA is never ours.
    const trustDomain = this.current().roots.trustDomain;
    if (trustDomainOf(uri) !== trustDomain) {
      socket.destroy();
      this.refuse('trust-domain', { client: uri, trustDomain });
      return;
    }
    const serial = colonHex(cert.serialNumber);
    let decision;
    const asked = performance.now();
    try {
      decision = await this.source.authorize(this.options.name, uri, serial);
      this.options.timings?.authorize((performance.now() - asked) / 1000);
    } catch (err) {
      socket.destroy();
      this.refuse('authorize-failed', { client: uri, err: err instanceof Error ? err.message : String(err) });
      return;
    }
    if (!decision.authorized) {
      socket.destroy();
      this.refuse('denied', { client: uri, reason: decision.reason });
      return;
    }
    if (socket.destroyed) return;
    this.stats.accepted++;
    this.keepLive(socket, uri, serial);
    onConnection(socket, uri);
  }

  /** Keeps an admitted connection where a change of the intentions finds it, until it closes. */
  private keepLive(socket: TLSSocket, client: string, serial: string): void {
    if (this.options.closeDenied === false) return;
    let entry = this.live.get(client);
    if (entry === undefined) this.live.set(client, (entry = { serial, sockets: new Set() }));
    const { sockets } = entry;
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      if (sockets.size === 0 && this.live.get(client)?.sockets === sockets) this.live.delete(client);
    });
  }

  /** After the intentions changed: asks again for each client with open connections, and closes the denied. */
  private async recheckLive(): Promise<void> {
    for (const [client, { serial, sockets }] of [...this.live]) {
      let decision;
      try {
        decision = await this.source.authorize(this.options.name, client, serial);
      } catch {
        continue; // Not known now: established connections are left as they are.
      }
      if (decision.authorized) continue;
      const closed = sockets.size;
      for (const socket of [...sockets]) socket.destroy();
      this.stats.closedOnDeny += closed;
      this.log.info(
        { service: this.options.name, client, reason: decision.reason, connections: closed },
        'closed established mesh connections: the intentions now deny their client',
      );
    }
  }

  private refuse(reason: RefusalReason, fields: Record<string, unknown>): void {
    this.stats.refused[reason]++;
    this.log.info({ service: this.options.name, reason, ...fields }, 'refused a mesh connection');
  }

  private reached(): void {
    if (!this.unreachable) return;
    this.unreachable = false;
    this.log.info({ service: this.options.name }, 'the agent answers again');
  }

  private current(): { leaf: Leaf; roots: Roots } {
    if (this.leaf === undefined || this.roots === undefined)
      throw new Error(`${this.options.name}: no leaf and roots yet (await service.ready)`);
    return { leaf: this.leaf, roots: this.roots };
  }
}

/**
 * Reports each handshake's time to `timings`: Node hands the TLS socket its raw socket's address,
 * which tells a connection from the others open at once.
 */
function timeHandshakes(server: Server, timings: ServiceTimings): void {
  const started = new Map<string, number>();
  const key = (socket: { remoteAddress?: string | undefined; remotePort?: number | undefined }): string =>
    `${socket.remoteAddress}:${socket.remotePort}`;
  server.on('connection', (raw: Socket) => {
    const at = key(raw);
    started.set(at, performance.now());
    raw.once('close', () => started.delete(at));
  });
  server.on('secureConnection', (socket: TLSSocket) => {
    const at = key(socket);
    const start = started.get(at);
    started.delete(at);
    if (start !== undefined) timings.handshake((performance.now() - start) / 1000);
  });
}

/** The one URI of a subjectAltName list (`URI:…, DNS:…`), when it has exactly one. */
function uriSan(subjectAltName: string | undefined): string | undefined {
  const uris = (subjectAltName ?? '')
    .split(', ')
    .filter((name) => name.startsWith('URI:'))
    .map((name) => name.slice(4));
  return uris.length === 1 ? uris[0] : undefined;
}

/** Why the server's certificate is not `service`'s in `trustDomain`, or undefined when it is. */
function serverIdentityProblem(cert: PeerCertificate, service: string, trustDomain: string): Error | undefined {
  const uri = uriSan(cert.subjectaltname);
  const parsed = uri === undefined ? undefined : parseSpiffeId(uri);
  if (parsed?.ok !== true) return new Error(`the server's certificate names no mesh service (${uri ?? 'no URI SAN'})`);
  const id = parsed.id;
  if (id.kind !== 'service' || id.service !== service || id.host !== trustDomain)
    return new Error(`the server is ${uri}, not ${service} in trust domain ${trustDomain}`);
  return undefined;
}

/** The trust domain (the host) a SPIFFE ID names; undefined when it is not one. */
function trustDomainOf(uri: string): string | undefined {
  const parsed = parseSpiffeId(uri);
  return parsed.ok ? parsed.id.host : undefined;
}

/** `0A1B` → `0a:1b`, as the agent writes serials. */
function colonHex(serial: string): string {
  const hex = serial.toLowerCase().padStart(serial.length + (serial.length % 2), '0');
  return hex.match(/../g)?.join(':') ?? hex;
}
