// The node:http / node:https adapter: the same routes and replies as the uWS one behind the same
// boundary (server-types.ts), on Node's own parser (llhttp), which is strict about framing,
// answers HTTP/1.0, requires Host and runs on every Node line (docs/decisions.md D18). Its rules:
// a handler runs only once its whole body has arrived ('end'), so a request cut off or refused by
// the parser applies nothing; a client that goes away detaches its parked read.
import { createServer as createPlainServer, type IncomingMessage, type Server, type ServerOptions, type ServerResponse } from 'node:http';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:https';
import type { Socket } from 'node:net';
import { decodePathRest, errorReply, methodReply, redirectReply, unmatchedPathReply } from './dispatch.js';
import { Parked, type Deliver } from './blocking.js';
import { emptyFraming, framingProblem, noteFramingHeader, OVERSIZE_DRAIN_BYTES } from './framing.js';
import { listenError } from './listen-error.js';
import { STATUS_LINE, textReply, type Reply } from './reply.js';
import { ApiRequest, type RequestHead } from './request.js';
import { RequestLog } from './request-log.js';
import { RouteMatcher } from './route-match.js';
import { BODY_METHODS, type CompiledRoute, type Outcome, type RequestHandler } from './routes.js';
import type { HttpServer, HttpServerOptions } from './server-types.js';
import { contextOptions, type TlsServerCredentials } from './tls-credentials.js';

export interface NodeServerOptions extends HttpServerOptions {
  /** Serves HTTPS with these; plain HTTP without. */
  readonly tls?: TlsServerCredentials;
}

/** The uWS adapter's idle timeout: a kept-alive connection with no request is closed after it. */
const IDLE_MS = 10_000;
/** A request's head must arrive within this (slow-loris connections are closed). */
const HEADERS_MS = 10_000;
/** The whole request, body included; the answer may wait longer (a parked read). */
const REQUEST_MS = 60_000;

const EMPTY_BODY = Buffer.alloc(0);

export function startNodeServer(options: NodeServerOptions): Promise<HttpServer> {
  const { log } = options;
  const common: string[] = options.commonHeaders.flatMap(([name, value]) => [name, value]);
  const matcher = new RouteMatcher(options.routes);
  const requestLog = new RequestLog(log, options.recordRequest);
  /** The response in flight on a socket, so that a parse error can tell whether it may still answer. */
  const current = new WeakMap<Socket, ServerResponse>();
  /**
   * Connections whose last request was refused for its framing or head: Node goes on parsing what
   * follows in the same buffer (a smuggled request, say) and would hand it over; it is dropped.
   */
  const refusedSockets = new WeakSet<Socket>();
  const refuse = (message: IncomingMessage, res: ServerResponse, reply: Reply): void => {
    refusedSockets.add(message.socket);
    respond(res, reply, true);
  };

  const respond = (res: ServerResponse, reply: Reply, close: boolean): void => {
    if (res.headersSent || res.destroyed) return;
    const body = reply.body === undefined ? EMPTY_BODY : typeof reply.body === 'string' ? Buffer.from(reply.body) : reply.body;
    const headers = common.slice();
    if (reply.contentType !== undefined) headers.push('Content-Type', reply.contentType);
    if (reply.headers !== undefined) for (const [name, value] of reply.headers) headers.push(name, value);
    headers.push('Content-Length', String(body.byteLength));
    if (close) headers.push('Connection', 'close');
    res.writeHead(reply.status, statusText(reply.status), headers);
    res.end(body);
  };
  const deliver: Deliver<ServerResponse> = (res, reply, close) => respond(res, reply, close);

  const run = (res: ServerResponse, handler: RequestHandler, req: ApiRequest): void => {
    let result: Outcome;
    try {
      result = handler(req);
    } catch (err) {
      result = errorReply(err, log, req.head.path);
    }
    if (result instanceof Parked) {
      req.onAbort(result.attach(res, deliver, false));
      return;
    }
    if (!(result instanceof Promise)) {
      respond(res, result, false);
      return;
    }
    result.then(
      (reply) => respond(res, reply, false),
      (err: unknown) => respond(res, errorReply(err, log, req.head.path), false),
    );
  };

  const readBody = (message: IncomingMessage, res: ServerResponse, route: CompiledRoute, handler: RequestHandler, request: (body: Buffer) => ApiRequest): void => {
    const max = route.maxBodyBytes;
    const declared = message.headers['content-length'] === undefined ? -1 : Number(message.headers['content-length']);
    if (declared > max + OVERSIZE_DRAIN_BYTES) {
      respond(res, textReply(413, route.bodyTooLarge(declared, max)), true);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    /** Set once the body is over its cap: the rest is read and dropped, then this is the answer. */
    let tooLarge: Reply | undefined = declared > max ? textReply(413, route.bodyTooLarge(declared, max)) : undefined;
    message.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > max && tooLarge === undefined) tooLarge = textReply(413, route.bodyTooLarge(size, max));
      if (tooLarge === undefined) chunks.push(chunk);
      else if (size > max + OVERSIZE_DRAIN_BYTES) respond(res, tooLarge, true);
    });
    message.on('end', () => {
      if (tooLarge !== undefined) respond(res, tooLarge, false);
      else run(res, handler, request(chunks.length === 0 ? EMPTY_BODY : chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size)));
    });
  };

  const onRequest = (message: IncomingMessage, res: ServerResponse): void => {
    const socket = message.socket;
    if (refusedSockets.has(socket)) {
      socket.destroySoon(); // after the refusal's answer is written
      return;
    }
    current.set(socket, res);
    res.on('finish', () => {
      if (current.get(socket) === res) current.delete(socket);
    });
    message.on('error', () => {}); // a request cut off: 'close' below detaches it; the parser error is answered in clientError
    const method = message.method ?? 'GET';
    const url = message.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const rawQuery = q === -1 ? '' : url.slice(q + 1);
    const match = matcher.match(path);
    if (requestLog.enabled) {
      const route = match.kind === 'route' ? match.route.path : match.kind === 'redirect' ? path : 'unmatched';
      const trace = requestLog.start(route, method, requestLog.debug ? { path, rawQuery, from: `${socket.remoteAddress ?? ''}:${socket.remotePort ?? ''}` } : undefined);
      res.once('finish', () => requestLog.finish(trace, res.statusCode));
    }
    if (message.headers.host === undefined && message.httpVersion === '1.1') {
      refuse(message, res, textReply(400, 'Bad request: missing required Host header\n'));
      return;
    }
    const te = message.headers['transfer-encoding'];
    if (te !== undefined) {
      // llhttp refuses every other framing fault; a coding before chunked reaches us.
      const framing = emptyFraming();
      noteFramingHeader(framing, 'transfer-encoding', te);
      const problem = framingProblem(framing);
      if (problem !== undefined) {
        refuse(message, res, problem);
        return;
      }
    }
    if (match.kind === 'redirect') {
      respond(res, redirectReply(match.location, method), false);
      return;
    }
    if (match.kind === 'none') {
      respond(res, unmatchedPathReply(path, rawQuery, method), false);
      return;
    }
    const route = match.route;
    const handler = route.handlers.get(method);
    if (handler === undefined) {
      respond(res, methodReply(route, method), false);
      return;
    }
    const rest = route.prefix ? decodePathRest(match.rest) : '';
    if (rest === undefined) {
      respond(res, textReply(400, 'Invalid URL path: malformed percent-encoding'), false);
      return;
    }
    const head = readHead(message, method, path, rawQuery);
    let request: ApiRequest | undefined;
    res.on('close', () => {
      if (!res.writableEnded) request?.abort();
    });
    const make = (body: Buffer | undefined): ApiRequest => (request = new ApiRequest(head, rest, body));
    if (BODY_METHODS.has(method)) readBody(message, res, route, handler, make);
    else run(res, handler, make(undefined));
  };

  const onClientError = (err: NodeJS.ErrnoException, socket: Socket): void => {
    const res = current.get(socket);
    if (err.code === 'ECONNRESET' || !socket.writable || (res !== undefined && res.headersSent)) {
      socket.destroy();
      return;
    }
    const [status, text] = clientErrorReply(err);
    const body = `${text}\n`;
    const lines = [`HTTP/1.1 ${STATUS_LINE[status] ?? String(status)}`, ...pairs(common), 'Content-Type: text/plain; charset=utf-8', `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close'];
    socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
  };

  const serverOptions: ServerOptions = {
    requireHostHeader: false, // checked in onRequest, to answer with a message and the common headers
    insecureHTTPParser: false,
    headersTimeout: HEADERS_MS,
    requestTimeout: REQUEST_MS,
    keepAliveTimeout: IDLE_MS,
    connectionsCheckingInterval: 1000,
  };
  const tls = options.tls;
  const server: Server | TlsServer = tls === undefined ? createPlainServer(serverOptions, onRequest) : createTlsServer({ ...serverOptions, ...contextOptions(tls), requestCert: tls.requestCert, rejectUnauthorized: tls.rejectUnauthorized }, onRequest);
  server.on('clientError', onClientError);
  const api = tls === undefined ? 'HTTP' : 'HTTPS';

  return new Promise((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException): void => reject(listenError(api, options.host, options.port, err.code));
    server.once('error', failed);
    server.listen({ host: options.host, port: options.port, exclusive: true }, () => {
      server.off('error', failed);
      // Out of descriptors, accept fails with EMFILE and libuv sheds the connection; log it, once per episode.
      let shedding = false;
      server.on('error', (err: NodeJS.ErrnoException) => {
        if (shedding) return;
        shedding = true;
        log.warn({ err: { code: err.code, message: err.message } }, `${api} listener could not accept a connection`);
      });
      const address = server.address();
      resolve({
        port: typeof address === 'object' && address !== null ? address.port : options.port,
        close() {
          server.close();
          server.closeIdleConnections();
        },
        outOfDescriptors(out) {
          if (!out) shedding = false;
        },
        replaceCredentials(next) {
          if ('setSecureContext' in server) server.setSecureContext(contextOptions(next));
        },
      });
    });
  });
}

function readHead(message: IncomingMessage, method: string, path: string, rawQuery: string): RequestHead {
  const h = message.headers;
  return {
    method,
    path,
    rawQuery,
    tokenHeader: first(h['x-svc-token']) || first(h['x-consul-token']),
    authorization: h.authorization ?? '',
    namespaceHeader: first(h['x-svc-namespace']) || first(h['x-consul-namespace']),
    closeConnection: false, // Node keeps or closes the connection as the request asked
  };
}

/** Node joins repeated custom headers with ', '; the uWS adapter sees the first line only, and so does this. */
function first(value: string | string[] | undefined): string {
  if (value === undefined) return '';
  const text = Array.isArray(value) ? (value[0] ?? '') : value;
  const comma = text.indexOf(', ');
  return comma === -1 ? text : text.slice(0, comma);
}

function statusText(status: number): string {
  const line = STATUS_LINE[status];
  return line === undefined ? '' : line.slice(line.indexOf(' ') + 1);
}

function pairs(flat: readonly string[]): string[] {
  const lines: string[] = [];
  for (let i = 0; i < flat.length; i += 2) lines.push(`${flat[i]}: ${flat[i + 1]}`);
  return lines;
}

/** The status and text for a request the parser refused (llhttp's reason, e.g. "Duplicate Content-Length"). */
function clientErrorReply(err: NodeJS.ErrnoException): [number, string] {
  const reason = (err as { reason?: unknown }).reason;
  const detail = typeof reason === 'string' && reason !== '' ? reason : err.message;
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return [431, 'Request header fields too large'];
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return [408, 'Request timeout'];
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'HPE_INVALID_CONTENT_LENGTH':
    case 'HPE_INVALID_TRANSFER_ENCODING':
    case 'HPE_INVALID_CHUNK_SIZE':
    case 'HPE_STRICT':
      return [400, `Bad request framing: ${detail}`];
    default:
      return [400, `Bad request: ${detail}`];
  }
}
