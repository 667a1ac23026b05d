// The uWebSockets.js adapter: the only file that imports uWS. Its rules: copy what a handler needs
// out of the request before any await; register onAborted before returning from a handler that
// answers later; write late answers inside cork; gather body chunks (copied, uWS neuters them)
// under a size cap and join them once. Hot path guarded by bench/http/kv.ts.
import uws from '@trufflesuite/uws-js-unofficial';
import type { HttpRequest, HttpResponse, us_listen_socket } from '@trufflesuite/uws-js-unofficial';
import { AgentError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { decodePathRest, errorReply, methodReply, redirectReply, unmatchedPathReply } from './dispatch.js';
import { STATUS_LINE, textReply, type Header, type Reply } from './reply.js';
import { ApiRequest, type RequestHead } from './request.js';
import { Parked, type Deliver } from './blocking.js';
import { BODY_METHODS, type CompiledRoute, type Outcome, type RequestHandler } from './routes.js';

/** True when the package loaded its native binary rather than its slow JavaScript fallback. */
export const uwsIsNative: boolean = typeof (uws as unknown as { getParts?: unknown }).getParts === 'function';

export interface HttpServerOptions {
  readonly host: string;
  readonly port: number;
  readonly routes: readonly CompiledRoute[];
  /** Headers on every response, errors included (default ACL policy, translate addresses). */
  readonly commonHeaders: readonly Header[];
  readonly log: Logger;
}

export interface HttpServer {
  readonly port: number;
  /** Stops accepting connections. In-flight responses may still be written. */
  close(): void;
}

const EMPTY_BODY = Buffer.alloc(0);

export function startHttpServer(options: HttpServerOptions): Promise<HttpServer> {
  const { log, commonHeaders } = options;
  const app = uws.App();

  const respond = (res: HttpResponse, reply: Reply, head: boolean, close: boolean): void => {
    res.writeStatus(STATUS_LINE[reply.status] ?? String(reply.status));
    for (const [name, value] of commonHeaders) res.writeHeader(name, value);
    if (reply.contentType !== undefined) res.writeHeader('Content-Type', reply.contentType);
    const extra = reply.headers;
    if (extra !== undefined) for (const [name, value] of extra) res.writeHeader(name, value);
    if (head) res.endWithoutBody(reply.body?.length ?? 0, close);
    else res.end(reply.body, close);
  };

  /** Writes a reply that was not ready inside the request handler (uWS wants it corked). */
  const deliverLater: Deliver<HttpResponse> = (res, reply, close) => res.cork(() => respond(res, reply, false, close));

  /** Runs a handler; answers at once, when its promise settles, or when its parked read wakes. */
  const run = (res: HttpResponse, handler: RequestHandler, req: ApiRequest, inHandler: boolean, abortHooked: boolean): void => {
    let result: Outcome;
    try {
      result = handler(req);
    } catch (err) {
      result = errorReply(err, log, req.head.path);
    }
    const close = req.head.closeConnection;
    if (result instanceof Parked) {
      const detach = result.attach(res, deliverLater, close);
      if (abortHooked) req.onAbort(detach);
      else res.onAborted(detach);
      return;
    }
    if (!(result instanceof Promise)) {
      if (inHandler) respond(res, result, false, close);
      else deliverLater(res, result, close);
      return;
    }
    if (!abortHooked) res.onAborted(() => req.abort());
    const finish = (reply: Reply): void => {
      if (req.aborted) return;
      req.aborted = true; // answered: a later abort or second answer is a no-op
      deliverLater(res, reply, close);
    };
    result.then(finish, (err: unknown) => finish(errorReply(err, log, req.head.path)));
  };

  const readBody = (res: HttpResponse, route: CompiledRoute, handler: RequestHandler, head: RequestHead, rest: string, contentLength: string, chunked: boolean): void => {
    const max = route.maxBodyBytes;
    const declared = contentLength === '' ? -1 : Number(contentLength);
    if (declared > max) {
      respond(res, textReply(413, route.bodyTooLarge(declared, max)), false, true);
      return;
    }
    if (declared <= 0 && !chunked) {
      run(res, handler, new ApiRequest(head, rest, EMPTY_BODY), true, false);
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
    res.onData((chunk, isLast) => {
      if (gone) return;
      size += chunk.byteLength;
      if (size > max) {
        gone = true; // the rest of the body is not read: answer and close the connection
        res.cork(() => respond(res, textReply(413, route.bodyTooLarge(size, max)), false, true));
        return;
      }
      if (chunk.byteLength > 0) chunks.push(Buffer.copyBytesFrom(new Uint8Array(chunk)));
      if (!isLast) return;
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size);
      request = new ApiRequest(head, rest, body);
      run(res, handler, request, false, true);
    });
  };

  // A path declared exactly (PUT /v1/acl/token) beside its subtree (/v1/acl/token/) keeps its own
  // handler, as in ServeMux; uWS refuses the same pattern twice, so no redirect is added for it.
  const exactPaths = new Set(options.routes.filter((route) => !route.prefix).map((route) => route.path));
  for (const route of options.routes) {
    app.any(route.prefix ? `${route.path}*` : route.path, (res, req) => {
      const method = req.getCaseSensitiveMethod();
      const handler = route.handlers.get(method);
      if (handler === undefined) {
        respond(res, methodReply(route, method), method === 'HEAD', wantsClose(req));
        return;
      }
      const head = readHead(req, method);
      let rest = '';
      if (route.prefix) {
        const decoded = decodePathRest(head.path.slice(route.path.length));
        if (decoded === undefined) {
          respond(res, textReply(400, 'Invalid URL path: malformed percent-encoding'), false, head.closeConnection);
          return;
        }
        rest = decoded;
      }
      if (BODY_METHODS.has(method)) {
        readBody(res, route, handler, head, rest, req.getHeader('content-length'), req.getHeader('transfer-encoding') !== '');
      } else {
        run(res, handler, new ApiRequest(head, rest, undefined), true, false);
      }
    });
    if (route.prefix && !exactPaths.has(route.path.slice(0, -1))) {
      // ServeMux redirects the slash-less form of a subtree pattern to the subtree.
      const bare = route.path.slice(0, -1);
      app.any(bare, (res, req) => {
        const method = req.getCaseSensitiveMethod();
        respond(res, redirectReply(route.path, method), method === 'HEAD', wantsClose(req));
      });
    }
  }
  app.any('/*', (res, req) => {
    const method = req.getCaseSensitiveMethod();
    respond(res, unmatchedPathReply(req.getUrl(), req.getQuery() ?? '', method), method === 'HEAD', wantsClose(req));
  });

  return new Promise((resolve, reject) => {
    app.listen(options.host, options.port, (socket: us_listen_socket | false) => {
      if (!socket) {
        reject(new AgentError('HTTP_LISTEN', 'internal', `cannot listen on ${options.host}:${options.port}`));
        return;
      }
      let open = true;
      resolve({
        port: uws.us_socket_local_port(socket),
        close() {
          if (!open) return;
          open = false;
          uws.us_listen_socket_close(socket);
        },
      });
    });
  });
}

function readHead(req: HttpRequest, method: string): RequestHead {
  return {
    method,
    path: req.getUrl(),
    rawQuery: req.getQuery() ?? '',
    tokenHeader: req.getHeader('x-svc-token') || req.getHeader('x-consul-token'),
    authorization: req.getHeader('authorization'),
    namespaceHeader: req.getHeader('x-svc-namespace') || req.getHeader('x-consul-namespace'),
    cacheControl: req.getHeader('cache-control'),
    closeConnection: wantsClose(req),
  };
}

// uWS keeps connections alive regardless of the request's Connection header, so the agent
// honours `Connection: close` itself (high-connection-rate clients rely on it).
function wantsClose(req: HttpRequest): boolean {
  const connection = req.getHeader('connection');
  return connection !== '' && /(?:^|,)\s*close\s*(?:,|$)/i.test(connection);
}
