// The uWebSockets.js adapter, and the one file that names the uWS package (its loading, its native
// binary, its API): swapping the uWS build is a change here. It only moves bytes for the shared
// request flow (request-flow.ts), under uWS's rules: copy what a handler needs out of the request
// before any await; register onAborted before returning from a handler that answers later; write
// late answers inside cork; copy body chunks (uWS neuters them) for the flow to join once. Hot
// path guarded by bench/sizing/authorize.ts and bench/sizing/kv.ts. What uWS's own parser answers
// itself, and what the adapter refuses for it (chunked bodies, unknown methods): docs/decisions.md D18.
// Imported, not the global: Node's global `Buffer` is a getter, a call on every use.
import { Buffer } from 'node:buffer';
import { existsSync, readFileSync } from 'node:fs';
import { METHODS } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { HttpRequest, HttpResponse, us_listen_socket } from '@based/uws';
import { framingProblem, noteFramingHeader, resetFraming, type FramingHeaders } from './framing.js';
import { bindErrorCode, listenError } from './listen-error.js';
import type { HttpServer, HttpServerOptions } from './server-types.js';
import { agentError } from '../core/errors.js';
import { STATUS_LINE, errorTextReply, type Header, type Reply, type ReplyStream } from './reply.js';
import type { RequestHead } from './request.js';
import { RequestFlow, UNMATCHED_ROUTE, type TransportIo } from './request-flow.js';
import type { RequestTrace } from './request-log.js';

type Uws = typeof import('@based/uws');
const UWS_PACKAGE = '@based/uws';

/**
 * The upstream uWebSockets.js release each of the package's binaries is built from, by Node ABI:
 * 6.0.1 ships v20.51.0 for Node 18-23 and v20.56.0 for Node 24 and 25 (docs/decisions.md D18).
 */
const UPSTREAM_BY_ABI: Readonly<Record<string, string>> = {
  '108': 'v20.51.0',
  '115': 'v20.51.0',
  '127': 'v20.51.0',
  '131': 'v20.51.0',
  '137': 'v20.56.0',
  '141': 'v20.56.0',
};

/** What loading the uWS package gave on this Node: the build that serves, or why none can. */
export type UwsBuild =
  | { readonly loaded: true; readonly package: string; readonly version: string; readonly upstream: string }
  | {
      readonly loaded: false;
      readonly package: string;
      readonly version: string;
      readonly reason: string;
      readonly remedy?: string;
    };

let loadedModule: Uws | undefined;
let build: UwsBuild | undefined;

/**
 * Loads uWS once, on first need (choosing node:http never loads it). The binary counts as present
 * only once it loads: a file built for this Node may still need a newer glibc than the host's.
 */
export function uwsBuild(): UwsBuild {
  if (build !== undefined) return build;
  const require = createRequire(import.meta.url);
  let dir: string;
  try {
    dir = dirname(require.resolve(UWS_PACKAGE));
  } catch {
    return (build = {
      loaded: false,
      package: UWS_PACKAGE,
      version: '',
      reason: `the ${UWS_PACKAGE} package is not installed`,
    });
  }
  const version = (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
  const node = `Node ${process.versions.node}`;
  const file = join(dir, `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
  const upstream = UPSTREAM_BY_ABI[process.versions.modules] ?? 'of an unlisted release';
  if (!existsSync(file)) {
    const reason = `no native uWebSockets.js binary for ${node} (ABI ${process.versions.modules}) on ${process.platform}-${process.arch}`;
    return (build = { loaded: false, package: UWS_PACKAGE, version, reason, remedy: 'run Node 20 or 22 for uWS' });
  }
  try {
    loadedModule = require(UWS_PACKAGE) as Uws;
    return (build = { loaded: true, package: UWS_PACKAGE, version, upstream });
  } catch (err) {
    const glibc = glibcVersion();
    const wanted = /GLIBC_(\d+\.\d+)' not found/.exec(String(err))?.[1];
    const reason = `the uWebSockets.js ${upstream} binary for ${node} does not load on this host (glibc ${glibc ?? 'absent'}${wanted === undefined ? '' : `, it needs ${wanted}`})`;
    const remedy =
      wanted === undefined
        ? `run Node 20 or 22 (${String(err).split('\n').pop() ?? ''})`
        : `run Node 20 or 22, whose uWS binaries need glibc 2.27, or a distribution with glibc ${wanted} or newer (Debian 13, Ubuntu 24.04)`;
    return (build = { loaded: false, package: UWS_PACKAGE, version, reason, remedy });
  }
}

function glibcVersion(): string | undefined {
  const header = (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header;
  return header?.glibcVersionRuntime;
}

/**
 * Out of descriptors, uWS retries the failed accept on every turn of the event loop, a busy loop
 * on one core (docs/decisions.md#descriptor-exhaustion). Each turn then sleeps this long instead:
 * the retries cost a few percent of a core, and answers on open connections wait 1 ms at most.
 */
const EXHAUSTED_TURN_PAUSE_MS = 1;
const turnPause = new Int32Array(new SharedArrayBuffer(4));

export function startUwsServer(options: HttpServerOptions): Promise<HttpServer> {
  const uws = uwsBuild().loaded ? loadedModule : undefined;
  if (uws === undefined)
    throw new Error('uWebSockets.js does not load on this Node: chooseTransport picks node:http here');
  const { commonHeaders } = options;
  const app = uws.App();

  // Constant names and values go to uWS pre-encoded: converting a JS string costs more than the
  // write itself (profiled: ~7% of the agent's CPU on authorize). bench/sizing/authorize.ts guards it.
  const common = commonHeaders.map(([name, value]) => [latin1(name), latin1(value)] as const);
  const blocks = new HeaderBlocks(commonHeaders);
  const write = (res: HttpResponse, reply: Reply, head: boolean, close: boolean): void => {
    // uWS writes `200 OK` itself when no status is set: one native call fewer on most answers.
    if (reply.status !== 200) res.writeStatus(STATUS_BYTES.get(reply.status) ?? String(reply.status));
    const extra = reply.headers;
    const block = blocks.get(extra, reply.contentType);
    if (block !== undefined) {
      res.writeHeader(block[0], block[1]);
    } else {
      for (const [name, value] of common) res.writeHeader(name, value);
      if (reply.contentType !== undefined) res.writeHeader(CONTENT_TYPE, encodedConstant(reply.contentType));
      if (extra !== undefined) for (const [name, value] of extra) res.writeHeader(encodedConstant(name), value);
    }
    if (reply.stream !== undefined) openStream(res, reply.stream, head);
    else if (head) endHead(res, reply, close);
    else res.end(reply.body, close);
  };
  const io: TransportIo<HttpResponse, ArrayBuffer> = {
    write,
    writeLate: (res, reply, close) => void res.cork(() => write(res, reply, false, close)),
    refuse: (res, reply) => refuseAndClose(res, reply, common),
    onGone: (res, gone) => void res.onAborted(gone),
    readBody: (res, piece) => void res.onData(piece),
    keep: copyChunk,
    // After the read that brought the request: microtasks run before uWS parses on, and a request
    // pipelined behind this one closes the connection first. Paused, uWS reads nothing more.
    hold: (_res, run) => held.add(run),
    holdReads: (res) => void res.pause(),
    release: (res) => void res.resume(),
  };
  const held = new NextTurn();
  const flow = new RequestFlow(io, options.log, options.recordRequest);
  const requestLog = flow.requestLog;
  /** Starts the request's record when debug or Prometheus is on. */
  // Passed along to the answer as an argument: a property set on uWS's response object per request
  // cost authorize about a sixth of its throughput.
  const traced = (res: HttpResponse, req: HttpRequest, method: string, route: string): RequestTrace | undefined => {
    if (!requestLog.enabled) return undefined;
    const line = requestLog.debug
      ? {
          path: req.getUrl(),
          rawQuery: req.getQuery() ?? '',
          from: Buffer.from(res.getRemoteAddressAsText()).toString(),
        }
      : undefined;
    return requestLog.start(route, method, line);
  };

  // A path declared exactly (PUT /v1/acl/token) beside its subtree (/v1/acl/token/) keeps its own
  // handler, as in ServeMux; uWS refuses the same pattern twice, so no redirect is added for it.
  const exactPaths = new Set(options.routes.filter((route) => !route.prefix).map((route) => route.path));
  const framing = flow.framing;
  const heads = new HeadReader(framing);
  /** What uWS's parser passes and llhttp refuses, answered here and closed; true when answered. */
  const refusedHere = (res: HttpResponse, method: string, trace: RequestTrace | undefined): boolean => {
    const reply = !KNOWN_METHODS.has(method)
      ? UNKNOWN_METHOD
      : framing.transferEncoding !== undefined && framingProblem(framing) === undefined
        ? LENGTH_REQUIRED
        : undefined;
    if (reply === undefined) return false;
    flow.refuse(res, reply, trace);
    return true;
  };
  for (const route of options.routes) {
    app.any(route.prefix ? `${route.path}*` : route.path, (res, req) => {
      const method = req.getCaseSensitiveMethod();
      const trace = traced(res, req, method, route.path);
      const head = heads.read(req, method);
      if (!refusedHere(res, method, trace)) flow.route(res, route, head, trace);
    });
    if (route.prefix && !exactPaths.has(route.path.slice(0, -1))) {
      // ServeMux redirects the slash-less form of a subtree pattern to the subtree.
      const bare = route.path.slice(0, -1);
      app.any(bare, (res, req) => {
        const method = req.getCaseSensitiveMethod();
        const trace = traced(res, req, method, bare);
        const close = wantsClose(req, framing);
        if (!refusedHere(res, method, trace)) flow.redirect(res, route.path, method, close, trace);
      });
    }
  }
  app.any('/*', (res, req) => {
    const method = req.getCaseSensitiveMethod();
    const trace = traced(res, req, method, UNMATCHED_ROUTE);
    const close = wantsClose(req, framing);
    if (!refusedHere(res, method, trace)) flow.unmatched(res, req.getUrl(), req.getQuery() ?? '', method, close, trace);
  });

  return new Promise((resolve, reject) => {
    // Exclusive: without it uWS binds with SO_REUSEPORT, and a second agent on the address would
    // share its connections (docs/decisions.md D18).
    const listen = app.listen as unknown as (
      host: string,
      port: number,
      options: number,
      cb: (socket: us_listen_socket | false) => void,
    ) => void;
    listen.call(app, options.host, options.port, LISTEN_EXCLUSIVE_PORT, (socket: us_listen_socket | false) => {
      if (!socket) {
        void bindErrorCode(options.host, options.port).then((code) =>
          reject(listenError('HTTP', options.host, options.port, code)),
        );
        return;
      }
      let open = true;
      let pacing = false;
      const pace = (): void => {
        if (!pacing || !open) return;
        Atomics.wait(turnPause, 0, 0, EXHAUSTED_TURN_PAUSE_MS);
        setImmediate(pace);
      };
      resolve({
        port: uws.us_socket_local_port(socket),
        close() {
          if (!open) return;
          open = false;
          uws.us_listen_socket_close(socket);
        },
        outOfDescriptors(out) {
          if (out && !pacing) setImmediate(pace);
          pacing = out;
        },
      });
    });
  });
}

/**
 * Calls what is added on the event loop's next turn, in order, with one setImmediate per turn
 * however many are added (bench/probes/authorize-instructions.ts, its KV PUT rows).
 */
class NextTurn {
  private queue: (() => void)[] = [];
  private spare: (() => void)[] = [];
  private readonly drain = (): void => {
    const runs = this.queue;
    this.queue = this.spare;
    for (const run of runs) run();
    runs.length = 0;
    this.spare = runs;
  };

  add(run: () => void): void {
    if (this.queue.push(run) === 1) setImmediate(this.drain);
  }
}

/** The methods llhttp (node:http) parses; uWS hands any token over, lowercase included, and those get 501. */
const KNOWN_METHODS: ReadonlySet<string> = new Set(METHODS);
const UNKNOWN_METHOD = errorTextReply(agentError('HTTP_METHOD_UNKNOWN'));
/**
 * uWS decodes chunked bodies without checking the CRLF after each chunk's data, so a chunk longer
 * than its size would be stored cut and its tail read as the next request: chunked request bodies
 * are refused on this transport; node:http (every address but loopback, and HTTPS) takes them.
 */
const LENGTH_REQUIRED = errorTextReply(agentError('HTTP_LENGTH_REQUIRED'));

/** uWS's LIBUS_LISTEN_EXCLUSIVE_PORT; its typings declare the option only for a listen without a host. */
const LISTEN_EXCLUSIVE_PORT = 1;

const CONTENT_TYPE = latin1('Content-Type');
const CONTENT_LENGTH = latin1('Content-Length');
const CONNECTION = latin1('Connection');
const CLOSE_VALUE = latin1('close');
const UNCORK_BYTES = 16 * 1024 + 1;

/**
 * Ends a HEAD answer: the body's length, no body. This build's endWithoutBody(length) leaves the
 * response open and uWS then aborts the process, so the length is written as a header and
 * endWithoutBody() called without one; it takes no close flag then, so `Connection: close` is
 * only said (the client that asked for it closes).
 */
function endHead(res: HttpResponse, reply: Reply, close: boolean): void {
  const body = reply.body;
  res.writeHeader(
    CONTENT_LENGTH,
    String(body === undefined ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength),
  );
  if (close) res.writeHeader(CONNECTION, CLOSE_VALUE);
  res.endWithoutBody();
}

/**
 * Opens a streamed body (reply.ts): uWS sends the head with the first chunk and frames each write
 * as a chunk. Every later write is corked: it comes from a timer, never from a uWS callback. The
 * flow hooked the client going to the stream's close, after which the response is never touched.
 */
function openStream(res: HttpResponse, stream: ReplyStream, head: boolean): void {
  if (head) {
    res.endWithoutBody();
    stream.close();
    return;
  }
  stream.open({
    write(chunk) {
      let ok = true;
      res.cork(() => {
        ok = res.write(chunk);
      });
      return ok;
    },
    drained(fn) {
      res.onWritable(() => {
        fn();
        return true;
      });
    },
    end() {
      res.cork(() => res.end());
    },
  });
}

/**
 * Answers and closes the connection at once. uWS closes after end() only once it has parsed the
 * rest of its buffer, which may hold a smuggled request, and close() is refused after end(). So the
 * answer is written unended: the head, then the body as the tail of the last header's value (uWS
 * writes values verbatim and follows each with CRLF, which becomes the body's last two bytes). The
 * body is padded past uWS's 16 KiB cork buffer, which makes uWS send it before close() runs.
 */
function refuseAndClose(res: HttpResponse, reply: Reply, common: readonly (readonly [Buffer, Buffer])[]): void {
  const text = typeof reply.body === 'string' ? reply.body.replace(/\n$/, '') : '';
  res.onAborted(() => {});
  res.cork(() => {
    res.writeStatus(STATUS_BYTES.get(reply.status) ?? String(reply.status));
    for (const [name, value] of common) res.writeHeader(name, value);
    if (reply.contentType !== undefined) res.writeHeader(CONTENT_TYPE, encodedConstant(reply.contentType));
    res.writeHeader(CONNECTION, CLOSE_VALUE);
    const padded = text.padEnd(UNCORK_BYTES, ' ');
    res.writeHeader(CONTENT_LENGTH, `${Buffer.byteLength(padded) + 2}\r\n\r\n${padded}`);
  });
  res.close();
}
const STATUS_BYTES = new Map(Object.entries(STATUS_LINE).map(([status, line]) => [Number(status), latin1(line)]));

/** Header names and content types are code constants: encoded once, on first use. */
const constants = new Map<string, Buffer>();
function encodedConstant(text: string): Buffer | string {
  const hit = constants.get(text);
  if (hit !== undefined) return hit;
  if (constants.size >= 256) return text; // not a constant after all: do not grow without bound
  const bytes = latin1(text);
  constants.set(text, bytes);
  return bytes;
}

const NO_HEADERS: readonly Header[] = Object.freeze([]);

/**
 * A reply whose extra headers are a frozen array (a constant, such as authorize's X-Cache pairs)
 * has all its headers written as one pre-encoded block: one native call instead of one per header
 * (bench/sizing/authorize.ts: about +3% requests/s). The block is the first header's name, then a
 * value that carries the remaining `Name: value` lines, which uWS writes verbatim.
 */
class HeaderBlocks {
  private readonly byHeaders = new WeakMap<readonly Header[], Map<string, readonly [Buffer, Buffer]>>();

  constructor(private readonly common: readonly Header[]) {}

  get(extra: readonly Header[] | undefined, contentType: string | undefined): readonly [Buffer, Buffer] | undefined {
    const headers = extra ?? NO_HEADERS;
    if (!Object.isFrozen(headers)) return undefined;
    let byType = this.byHeaders.get(headers);
    if (byType === undefined) {
      byType = new Map();
      this.byHeaders.set(headers, byType);
    }
    const type = contentType ?? '';
    let block = byType.get(type);
    if (block === undefined) {
      if (byType.size >= 16) return undefined; // content types are constants; stay bounded anyway
      const lines: Header[] = [...this.common];
      if (contentType !== undefined) lines.push(['Content-Type', contentType]);
      lines.push(...headers);
      const [first, ...rest] = lines;
      if (first === undefined) return undefined;
      const value = [first[1], ...rest.map(([name, v]) => `${name}: ${v}`)].join('\r\n');
      block = [latin1(first[0]), latin1(value)];
      byType.set(type, block);
    }
    return block;
  }
}

/**
 * A body chunk copied out of uWS's buffer, which it reuses once the callback returns. A small body
 * lands in Node's shared pool (one allocation fewer; bodies are read, never kept whole): about half
 * the instructions of Buffer.copyBytesFrom (bench/probes/authorize-instructions.ts).
 */
function copyChunk(chunk: ArrayBuffer): Buffer {
  const copy = Buffer.allocUnsafe(chunk.byteLength);
  copy.set(new Uint8Array(chunk));
  return copy;
}

function latin1(text: string): Buffer {
  return Buffer.from(text, 'latin1');
}

/**
 * Copies the request head out of uWS in one pass over the headers: one native call plus a
 * callback per header is cheaper than a getHeader call per header of interest (the authorize
 * hot path reads nine), and the copy stays valid after the handler returns. The callback is made
 * once and fills this reader, not a closure per request.
 */
class HeadReader {
  private svcToken = '';
  private consulToken = '';
  private authorization = '';
  private svcNamespace = '';
  private consulNamespace = '';
  private connection = '';

  constructor(private readonly framing: FramingHeaders) {}

  private readonly visit = (name: string, value: string): void => {
    switch (name) {
      case 'content-length':
      case 'transfer-encoding':
        noteFramingHeader(this.framing, name, value);
        break;
      case 'x-svc-token':
        this.svcToken = value;
        break;
      case 'x-consul-token':
        this.consulToken = value;
        break;
      case 'authorization':
        this.authorization = value;
        break;
      case 'x-svc-namespace':
        this.svcNamespace = value;
        break;
      case 'x-consul-namespace':
        this.consulNamespace = value;
        break;
      case 'connection':
        this.connection = value;
        break;
    }
  };

  read(req: HttpRequest, method: string): RequestHead {
    this.svcToken = this.consulToken = this.authorization = '';
    this.svcNamespace = this.consulNamespace = this.connection = '';
    resetFraming(this.framing);
    req.forEach(this.visit);
    const connection = this.connection;
    return {
      method,
      path: req.getUrl(),
      rawQuery: req.getQuery() ?? '',
      tokenHeader: this.svcToken || this.consulToken,
      authorization: this.authorization,
      namespaceHeader: this.svcNamespace || this.consulNamespace,
      closeConnection: connection !== '' && CLOSE.test(connection),
    };
  }
}

// uWS keeps connections alive regardless of the request's Connection header, so the agent
// honours `Connection: close` itself (high-connection-rate clients rely on it).
const CLOSE = /(?:^|,)\s*close\s*(?:,|$)/i;

/** Off the hot path (redirects, unmatched paths): reads the framing headers and the Connection header. */
function wantsClose(req: HttpRequest, framing: FramingHeaders): boolean {
  resetFraming(framing);
  let connection = '';
  req.forEach((name, value) => {
    if (name === 'connection') connection = value;
    else noteFramingHeader(framing, name, value);
  });
  return connection !== '' && CLOSE.test(connection);
}
