// The uWebSockets.js adapter: the only file that imports uWS. Its rules: copy what a handler needs
// out of the request before any await; register onAborted before returning from a handler that
// answers later; write late answers inside cork; gather body chunks (copied, uWS neuters them)
// under a size cap and join them once; refuse unsound framing (framing.ts) before anything else,
// on every route, and close. Hot path guarded by bench/http/kv.ts. What uWS's own parser lets
// through unseen (HTTP/1.0, a chunk longer than its size) is in docs/decisions.md D18.
import uws from '@trufflesuite/uws-js-unofficial';
import type { HttpRequest, HttpResponse, us_listen_socket } from '@trufflesuite/uws-js-unofficial';
import { emptyFraming, framingProblem, noteFramingHeader, OVERSIZE_DRAIN_BYTES, resetFraming, type FramingHeaders } from './framing.js';
import { bindErrorCode, listenError } from './listen-error.js';
import type { HttpServer, HttpServerOptions } from './server-types.js';
import { decodePathRest, errorReply, methodReply, redirectReply, unmatchedPathReply } from './dispatch.js';
import { STATUS_LINE, textReply, type Header, type Reply } from './reply.js';
import { ApiRequest, type RequestHead } from './request.js';
import { Parked, type Deliver } from './blocking.js';
import { RequestLog, type RequestTrace } from './request-log.js';
import { BODY_METHODS, type CompiledRoute, type Outcome, type RequestHandler } from './routes.js';


/**
 * Out of descriptors, uWS retries the failed accept on every turn of the event loop, a busy loop
 * on one core (docs/decisions.md#descriptor-exhaustion). Each turn then sleeps this long instead:
 * the retries cost a few percent of a core, and answers on open connections wait 1 ms at most.
 */
const EXHAUSTED_TURN_PAUSE_MS = 1;
const turnPause = new Int32Array(new SharedArrayBuffer(4));

const EMPTY_BODY = Buffer.alloc(0);

export function startUwsServer(options: HttpServerOptions): Promise<HttpServer> {
  const { log, commonHeaders } = options;
  const app = uws.App();

  // Constant names and values go to uWS pre-encoded: converting a JS string costs more than the
  // write itself (profiled: ~7% of the agent's CPU on authorize). bench/http/authorize.ts guards it.
  const common = commonHeaders.map(([name, value]) => [latin1(name), latin1(value)] as const);
  const blocks = new HeaderBlocks(commonHeaders);
  const requestLog = new RequestLog(log, options.recordRequest);
  /** Starts the request's record when debug or Prometheus is on (the trace rides on the response object). */
  // Passed along to the answer as an argument: a property set on uWS's response object per request
  // cost authorize about a sixth of its throughput.
  const traced = (res: HttpResponse, req: HttpRequest, method: string, route: string): RequestTrace | undefined => {
    if (!requestLog.enabled) return undefined;
    const line = requestLog.debug ? { path: req.getUrl(), rawQuery: req.getQuery() ?? '', from: Buffer.from(res.getRemoteAddressAsText()).toString() } : undefined;
    return requestLog.start(route, method, line);
  };
  const respond = (res: HttpResponse, reply: Reply, head: boolean, close: boolean, trace: RequestTrace | undefined): void => {
    if (trace !== undefined) requestLog.finish(trace, reply.status);
    res.writeStatus(STATUS_BYTES.get(reply.status) ?? String(reply.status));
    const extra = reply.headers;
    const block = blocks.get(extra, reply.contentType);
    if (block !== undefined) {
      res.writeHeader(block[0], block[1]);
    } else {
      for (const [name, value] of common) res.writeHeader(name, value);
      if (reply.contentType !== undefined) res.writeHeader(CONTENT_TYPE, encodedConstant(reply.contentType));
      if (extra !== undefined) for (const [name, value] of extra) res.writeHeader(encodedConstant(name), value);
    }
    if (head) res.endWithoutBody(reply.body?.length ?? 0, close);
    else res.end(reply.body, close);
  };

  /** Writes a reply that was not ready inside the request handler (uWS wants it corked). */
  const deliverLater = (res: HttpResponse, reply: Reply, close: boolean, trace?: RequestTrace): void => void res.cork(() => respond(res, reply, false, close, trace));

  /** Runs a handler; answers at once, when its promise settles, or when its parked read wakes. */
  const run = (res: HttpResponse, handler: RequestHandler, req: ApiRequest, inHandler: boolean, abortHooked: boolean, trace: RequestTrace | undefined): void => {
    let result: Outcome;
    try {
      result = handler(req);
    } catch (err) {
      result = errorReply(err, log, req.head.path);
    }
    const close = req.head.closeConnection;
    if (result instanceof Parked) {
      const deliver: Deliver<HttpResponse> = trace === undefined ? deliverLater : (r, reply, c) => deliverLater(r, reply, c, trace);
      const detach = result.attach(res, deliver, close);
      if (abortHooked) req.onAbort(detach);
      else res.onAborted(detach);
      return;
    }
    if (!(result instanceof Promise)) {
      if (inHandler) respond(res, result, false, close, trace);
      else deliverLater(res, result, close, trace);
      return;
    }
    if (!abortHooked) res.onAborted(() => req.abort());
    const finish = (reply: Reply): void => {
      if (req.aborted) return;
      req.aborted = true; // answered: a later abort or second answer is a no-op
      deliverLater(res, reply, close, trace);
    };
    result.then(finish, (err: unknown) => finish(errorReply(err, log, req.head.path)));
  };

  const readBody = (res: HttpResponse, route: CompiledRoute, handler: RequestHandler, head: RequestHead, rest: string, contentLength: string, chunked: boolean, trace: RequestTrace | undefined): void => {
    const max = route.maxBodyBytes;
    const declared = contentLength === '' ? -1 : Number(contentLength); // digits only: framingProblem checked it
    if (declared > max + OVERSIZE_DRAIN_BYTES) {
      respond(res, textReply(413, route.bodyTooLarge(declared, max)), false, true, trace);
      return;
    }
    if (declared <= 0 && !chunked) {
      run(res, handler, new ApiRequest(head, rest, EMPTY_BODY), true, false, trace);
      return;
    }
    let request: ApiRequest | undefined;
    let gone = false;
    res.onAborted(() => {
      gone = true;
      request?.abort();
    });
    const chunks: Buffer[] = [];
    let size = 0;
    /** Set once the body is over its cap: the rest is read and dropped, then this is the answer. */
    let tooLarge: Reply | undefined = declared > max ? textReply(413, route.bodyTooLarge(declared, max)) : undefined;
    res.onData((chunk, isLast) => {
      if (gone) return;
      size += chunk.byteLength;
      if (size > max && tooLarge === undefined) tooLarge = textReply(413, route.bodyTooLarge(size, max));
      if (tooLarge !== undefined) {
        const overflow = size > max + OVERSIZE_DRAIN_BYTES;
        if (!isLast && !overflow) return;
        gone = true;
        const answer = tooLarge;
        res.cork(() => respond(res, answer, false, overflow || head.closeConnection, trace));
        return;
      }
      if (chunk.byteLength > 0) chunks.push(Buffer.copyBytesFrom(new Uint8Array(chunk)));
      if (!isLast) return;
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
      request = new ApiRequest(head, rest, body);
      run(res, handler, request, false, true, trace);
    });
  };

  // A path declared exactly (PUT /v1/acl/token) beside its subtree (/v1/acl/token/) keeps its own
  // handler, as in ServeMux; uWS refuses the same pattern twice, so no redirect is added for it.
  const exactPaths = new Set(options.routes.filter((route) => !route.prefix).map((route) => route.path));
  // Reused across requests: only read synchronously, inside one request callback.
  const framing = emptyFraming();
  /** Answers a request whose framing is unsound and closes; false when it is sound. */
  const refused = (res: HttpResponse, trace: RequestTrace | undefined): boolean => {
    const problem = framingProblem(framing);
    if (problem === undefined) return false;
    if (trace !== undefined) requestLog.finish(trace, problem.status);
    refuseAndClose(res, problem, common);
    return true;
  };
  for (const route of options.routes) {
    app.any(route.prefix ? `${route.path}*` : route.path, (res, req) => {
      const method = req.getCaseSensitiveMethod();
      const trace = traced(res, req, method, route.path);
      const head = readHead(req, method, framing);
      if (refused(res, trace)) return;
      const handler = route.handlers.get(method);
      if (handler === undefined) {
        respond(res, methodReply(route, method), method === 'HEAD', head.closeConnection, trace);
        return;
      }
      let rest = '';
      if (route.prefix) {
        const decoded = decodePathRest(head.path.slice(route.path.length));
        if (decoded === undefined) {
          respond(res, textReply(400, 'Invalid URL path: malformed percent-encoding'), false, head.closeConnection, trace);
          return;
        }
        rest = decoded;
      }
      if (BODY_METHODS.has(method)) {
        readBody(res, route, handler, head, rest, framing.contentLength, framing.transferEncoding !== undefined, trace);
      } else {
        run(res, handler, new ApiRequest(head, rest, undefined), true, false, trace);
      }
    });
    if (route.prefix && !exactPaths.has(route.path.slice(0, -1))) {
      // ServeMux redirects the slash-less form of a subtree pattern to the subtree.
      const bare = route.path.slice(0, -1);
      app.any(bare, (res, req) => {
        const method = req.getCaseSensitiveMethod();
        const trace = traced(res, req, method, bare);
        const close = wantsClose(req, framing);
        if (!refused(res, trace)) respond(res, redirectReply(route.path, method), method === 'HEAD', close, trace);
      });
    }
  }
  app.any('/*', (res, req) => {
    const method = req.getCaseSensitiveMethod();
    const trace = traced(res, req, method, UNMATCHED_ROUTE);
    const close = wantsClose(req, framing);
    if (!refused(res, trace)) respond(res, unmatchedPathReply(req.getUrl(), req.getQuery() ?? '', method), method === 'HEAD', close, trace);
  });

  return new Promise((resolve, reject) => {
    // Exclusive: without it uWS binds with SO_REUSEPORT, and a second agent on the address would
    // share its connections (docs/decisions.md D18).
    const listen = app.listen as unknown as (host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void) => void;
    listen.call(app, options.host, options.port, LISTEN_EXCLUSIVE_PORT, (socket: us_listen_socket | false) => {
      if (!socket) {
        void bindErrorCode(options.host, options.port).then((code) => reject(listenError('HTTP', options.host, options.port, code)));
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

/** The route label of a request no route matched (a 404 or a redirect to a clean path). */
const UNMATCHED_ROUTE = 'unmatched';

/** uWS's LIBUS_LISTEN_EXCLUSIVE_PORT; its typings declare the option only for a listen without a host. */
const LISTEN_EXCLUSIVE_PORT = 1;

const CONTENT_TYPE = latin1('Content-Type');
const CONTENT_LENGTH = latin1('Content-Length');
const CONNECTION = latin1('Connection');
const CLOSE_VALUE = latin1('close');
const UNCORK_BYTES = 16 * 1024 + 1;

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
 * (bench/http/authorize.ts: about +3% requests/s). The block is the first header's name, then a
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

function latin1(text: string): Buffer {
  return Buffer.from(text, 'latin1');
}

/**
 * Copies the request head out of uWS in one pass over the headers: one native call plus a
 * callback per header is cheaper than a getHeader call per header of interest (the authorize
 * hot path reads nine), and the copy stays valid after the handler returns.
 */
function readHead(req: HttpRequest, method: string, framing: FramingHeaders): RequestHead {
  let svcToken = '';
  let consulToken = '';
  let authorization = '';
  let svcNamespace = '';
  let consulNamespace = '';
  let connection = '';
  resetFraming(framing);
  req.forEach((name, value) => {
    switch (name) {
      case 'content-length':
      case 'transfer-encoding':
        noteFramingHeader(framing, name, value);
        break;
      case 'x-svc-token':
        svcToken = value;
        break;
      case 'x-consul-token':
        consulToken = value;
        break;
      case 'authorization':
        authorization = value;
        break;
      case 'x-svc-namespace':
        svcNamespace = value;
        break;
      case 'x-consul-namespace':
        consulNamespace = value;
        break;
      case 'connection':
        connection = value;
        break;
    }
  });
  return {
    method,
    path: req.getUrl(),
    rawQuery: req.getQuery() ?? '',
    tokenHeader: svcToken || consulToken,
    authorization,
    namespaceHeader: svcNamespace || consulNamespace,
    closeConnection: connection !== '' && CLOSE.test(connection),
  };
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
