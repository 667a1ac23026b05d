// The node:http / node:https adapter: it moves bytes for the shared request flow
// (request-flow.ts) on Node's own parser (llhttp), which is strict about framing, answers
// HTTP/1.0, requires Host and runs on every Node line (docs/decisions.md D18). Its rules: a
// handler runs only once its whole body has arrived ('end'), so a request cut off or refused by
// the parser applies nothing; a connection whose request was refused is dropped, whatever follows
// on it; what llhttp refuses itself is answered here (clientError).
import {
  createServer as createPlainServer,
  type IncomingMessage,
  type Server,
  type ServerOptions,
  type ServerResponse,
} from 'node:http';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:https';
import type { Socket } from 'node:net';
import { noteFramingHeader, resetFraming, type FramingHeaders } from './framing.js';
import { listenError } from './listen-error.js';
import { agentError } from '../core/errors.js';
import { STATUS_LINE, errorTextReply, type Reply, type ReplyStream } from './reply.js';
import type { RequestHead } from './request.js';
import { matchedRoute, RequestFlow, type TransportIo } from './request-flow.js';
import type { RequestTrace } from './request-log.js';
import { RouteMatcher } from './route-match.js';
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
  /** The response in flight on a socket, so that a parse error can tell whether it may still answer. */
  const current = new WeakMap<Socket, ServerResponse>();
  /**
   * Connections whose last request was refused for its framing or head: Node goes on parsing what
   * follows in the same buffer (a smuggled request, say) and would hand it over; it is dropped.
   */
  const refusedSockets = new WeakSet<Socket>();

  const respond = (res: ServerResponse, reply: Reply, close: boolean): void => {
    if (res.headersSent || res.destroyed) return;
    if (reply.stream !== undefined) {
      openStream(res, reply, reply.stream, common);
      return;
    }
    const body =
      reply.body === undefined ? EMPTY_BODY : typeof reply.body === 'string' ? Buffer.from(reply.body) : reply.body;
    const headers = common.slice();
    if (reply.contentType !== undefined) headers.push('Content-Type', reply.contentType);
    if (reply.headers !== undefined) for (const [name, value] of reply.headers) headers.push(name, value);
    headers.push('Content-Length', String(body.byteLength));
    if (close) headers.push('Connection', 'close');
    res.writeHead(reply.status, statusText(reply.status), headers);
    res.end(body);
  };
  // Node drops the body of an answer to HEAD itself; every callback may write.
  const io: TransportIo<ServerResponse, Buffer> = {
    write: (res, reply, _head, close) => respond(res, reply, close),
    writeLate: respond,
    refuse(res, reply) {
      refusedSockets.add(res.req.socket);
      respond(res, reply, true);
    },
    onGone(res, gone) {
      res.on('close', () => {
        if (!res.writableEnded) gone();
      });
    },
    readBody(res, piece) {
      const message = res.req;
      message.on('data', (chunk: Buffer) => piece(chunk, false));
      message.on('end', () => piece(EMPTY_BODY, true));
    },
    keep: (chunk) => chunk,
    // node:http answers pipelined requests in order, late ones included.
    hold: (_res, run) => run(),
    holdReads: () => {},
    release: () => {},
  };
  const flow = new RequestFlow(io, log, options.recordRequest);
  const requestLog = flow.requestLog;

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
    message.on('error', () => {}); // a request cut off: the flow hears of it as gone; the parser error is answered in clientError
    const method = message.method ?? 'GET';
    const url = message.url ?? '/';
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const rawQuery = q === -1 ? '' : url.slice(q + 1);
    const match = matcher.match(path);
    let trace: RequestTrace | undefined;
    if (requestLog.enabled) {
      trace = requestLog.start(
        matchedRoute(match, path),
        method,
        requestLog.debug
          ? { path, rawQuery, from: `${socket.remoteAddress ?? ''}:${socket.remotePort ?? ''}` }
          : undefined,
      );
    }
    if (message.headers.host === undefined && message.httpVersion === '1.1') {
      flow.refuse(res, errorTextReply(agentError('HTTP_MISSING_HOST')), trace);
      return;
    }
    if (hostLines(message.rawHeaders) > 1) {
      flow.refuse(res, errorTextReply(agentError('HTTP_DUPLICATE_HOST')), trace);
      return;
    }
    readFraming(message, flow.framing);
    flow.matched(res, match, readHead(message, method, path, rawQuery), trace);
  };

  const onClientError = (err: NodeJS.ErrnoException, socket: Socket): void => {
    const res = current.get(socket);
    if (err.code === 'ECONNRESET' || !socket.writable || (res !== undefined && res.headersSent)) {
      socket.destroy();
      return;
    }
    const [status, text] = clientErrorReply(err);
    const body = `${text}\n`;
    const lines = [
      `HTTP/1.1 ${STATUS_LINE[status] ?? String(status)}`,
      ...pairs(common),
      'Content-Type: text/plain; charset=utf-8',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
    ];
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
  const server: Server | TlsServer =
    tls === undefined
      ? createPlainServer(serverOptions, onRequest)
      : createTlsServer(
          {
            ...serverOptions,
            ...contextOptions(tls),
            requestCert: tls.requestCert,
            rejectUnauthorized: tls.rejectUnauthorized,
          },
          onRequest,
        );
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

/**
 * Opens a streamed body (reply.ts): the head at once, without a length, so Node frames the body as
 * chunks (HTTP/1.1) or ends it by closing (HTTP/1.0); each write is one chunk. Node drops the body
 * of an answer to HEAD itself.
 */
function openStream(res: ServerResponse, reply: Reply, stream: ReplyStream, common: readonly string[]): void {
  const headers = common.slice();
  if (reply.contentType !== undefined) headers.push('Content-Type', reply.contentType);
  if (reply.headers !== undefined) for (const [name, value] of reply.headers) headers.push(name, value);
  res.writeHead(reply.status, statusText(reply.status), headers);
  res.flushHeaders();
  stream.open({
    write: (chunk) => res.write(chunk),
    drained: (fn) => void res.once('drain', fn),
    end: () => void res.end(),
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

/** Node keeps the first of several Host lines and drops the rest; RFC 9112 section 3.2 wants them refused. */
function hostLines(raw: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') count++;
  }
  return count;
}

/** llhttp refuses every other framing fault itself; a coding before chunked reaches the flow's check. */
function readFraming(message: IncomingMessage, framing: FramingHeaders): void {
  resetFraming(framing);
  const length = message.headers['content-length'];
  if (length !== undefined) noteFramingHeader(framing, 'content-length', length);
  const codings = message.headers['transfer-encoding'];
  if (codings !== undefined) noteFramingHeader(framing, 'transfer-encoding', codings);
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

/** A TLS record's first byte when it carries a handshake (a ClientHello, on a connection's first packet). */
const TLS_HANDSHAKE = 0x16;

/** The status and text for a request the parser refused (llhttp's reason, e.g. "Duplicate Content-Length"). */
function clientErrorReply(err: NodeJS.ErrnoException): [number, string] {
  const packet = (err as { rawPacket?: unknown }).rawPacket;
  if (Buffer.isBuffer(packet) && packet[0] === TLS_HANDSHAKE && packet[1] === 3) {
    return [400, 'Client sent a TLS handshake to an HTTP port: use http:// here, or https:// on the HTTPS port'];
  }
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
