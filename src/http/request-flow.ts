// The request life cycle both HTTP transports share, written once: the framing refusal, the
// route's method (405, OPTIONS), the rest of a subtree path (400), the body cap (413 and its
// drain), running the handler, late answers (a promise, a parked read), a client that goes away,
// and the request trace. An adapter (uws-server.ts, node-server.ts) copies the request out,
// hands it here, and implements TransportIo: it only moves bytes, under its transport's rules.
// Per request this allocates what the handler needs and nothing more; the hot path (authorize:
// a body, then a reply with no await) is guarded by bench/sizing/authorize.ts.
import { agentError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import type { RequestRecorder } from '../core/prometheus.js';
import { Parked, type Deliver } from './blocking.js';
import { decodePathRest, errorReply, methodReply, redirectReply, unmatchedPathReply } from './dispatch.js';
import { emptyFraming, framingProblem, OVERSIZE_DRAIN_BYTES } from './framing.js';
import { errorTextReply, type Reply } from './reply.js';
import { ApiRequest, type RequestHead } from './request.js';
import { RequestLog, type RequestTrace } from './request-log.js';
import type { RouteMatch } from './route-match.js';
import { BODY_METHODS, type CompiledRoute, type Outcome, type RequestHandler } from './routes.js';

/**
 * What a transport does for the flow, for one request at a time: `H` is its handle on a request
 * (the object it answers through), `C` a piece of body as it arrives. One object per server, the
 * handle passed along: the flow keeps no per-request state of its own beyond the body it gathers.
 */
export interface TransportIo<H, C extends { readonly byteLength: number }> {
  /** Writes a whole answer from inside the transport's request callback; `head`: a HEAD request, no body bytes. */
  write(handle: H, reply: Reply, head: boolean, close: boolean): void;
  /** Writes a whole answer from any later callback: a settled promise, a parked read waking. */
  writeLate(handle: H, reply: Reply, close: boolean): void;
  /** Answers unsound framing and closes the connection at once: nothing read after it on the connection runs. */
  refuse(handle: H, reply: Reply): void;
  /** Calls `gone` if the client goes away before the answer is written. The flow asks once per request at most. */
  onGone(handle: H, gone: () => void): void;
  /**
   * Hands the body to `piece` as it arrives, the last with `isLast` (an empty one if the transport has no flag),
   * from a callback in which `write` may answer (uWS corks a socket while it reads from it).
   */
  readBody(handle: H, piece: (chunk: C, isLast: boolean) => void): void;
  /** The bytes of a piece the request keeps (a transport that reuses its buffers copies them). */
  keep(chunk: C): Buffer;
  /**
   * Calls `run` for a request that may change state once the transport is sure to be able to
   * answer it, or knows the client has gone (docs/decisions.md#held-writes).
   */
  hold(handle: H, run: () => void): void;
  /** Reads nothing more of the connection: a held request will be answered later. */
  holdReads(handle: H): void;
  /** Reads the connection again, right before that answer is written. */
  release(handle: H): void;
}

/** The route label of a request no route matched (a 404, or a redirect to a clean path). */
export const UNMATCHED_ROUTE = 'unmatched';

/** The route label of a request a RouteMatcher matched: the route's pattern, the slash-less path, or unmatched. */
export function matchedRoute(match: RouteMatch, path: string): string {
  return match.kind === 'route' ? match.route.path : match.kind === 'redirect' ? path : UNMATCHED_ROUTE;
}

const EMPTY_BODY = Buffer.alloc(0);

export class RequestFlow<H, C extends { readonly byteLength: number }> {
  /** The per-request debug line and Prometheus record; the adapter starts a trace, the flow finishes it. */
  readonly requestLog: RequestLog;
  /**
   * The framing headers of the request being handed over, reused: the adapter fills it while it
   * copies the head and the flow reads it before anything else, in the same callback.
   */
  readonly framing = emptyFraming();
  /** A parked read's writer when no trace rides along: made once, not per request. */
  private readonly deliverLate: Deliver<H>;

  constructor(
    private readonly io: TransportIo<H, C>,
    private readonly log: Logger,
    recordRequest: RequestRecorder | undefined,
  ) {
    this.requestLog = new RequestLog(log, recordRequest);
    this.deliverLate = (handle, reply, close) => io.writeLate(handle, reply, close);
  }

  /** A request for one of the routes: framing, method and path checked, then its body read and its handler run. */
  route(handle: H, route: CompiledRoute, head: RequestHead, trace: RequestTrace | undefined): void {
    if (this.refused(handle, trace)) return;
    const method = head.method;
    const handler = route.handlers.get(method);
    if (handler === undefined) {
      this.answer(handle, methodReply(route, method), method === 'HEAD', head.closeConnection, trace);
      return;
    }
    let rest = '';
    if (route.prefix) {
      const decoded = decodePathRest(head.path.slice(route.path.length));
      if (decoded === undefined) {
        this.answer(handle, errorTextReply(agentError('HTTP_BAD_PATH_ESCAPE')), false, head.closeConnection, trace);
        return;
      }
      rest = decoded;
    }
    if (BODY_METHODS.has(method)) this.readBody(handle, route, handler, head, rest, trace);
    else if (route.changesState.has(method))
      this.held(handle, handler, new ApiRequest(head, rest, undefined), false, trace);
    else this.run(handle, handler, new ApiRequest(head, rest, undefined), true, false, trace);
  }

  /** A request a RouteMatcher matched, for a transport without a router of its own. */
  matched(handle: H, match: RouteMatch, head: RequestHead, trace: RequestTrace | undefined): void {
    if (match.kind === 'route') this.route(handle, match.route, head, trace);
    else if (match.kind === 'redirect') this.redirect(handle, match.location, head.method, head.closeConnection, trace);
    else this.unmatched(handle, head.path, head.rawQuery, head.method, head.closeConnection, trace);
  }

  /** The slash-less form of a subtree path: Go's ServeMux redirect to `location`. */
  redirect(handle: H, location: string, method: string, close: boolean, trace: RequestTrace | undefined): void {
    if (this.refused(handle, trace)) return;
    this.answer(handle, redirectReply(location, method), method === 'HEAD', close, trace);
  }

  /** A path no route takes: `/`, a redirect to the clean path, or a 404. */
  unmatched(
    handle: H,
    path: string,
    rawQuery: string,
    method: string,
    close: boolean,
    trace: RequestTrace | undefined,
  ): void {
    if (this.refused(handle, trace)) return;
    this.answer(handle, unmatchedPathReply(path, rawQuery, method), method === 'HEAD', close, trace);
  }

  /** Refuses the request and closes: unsound framing, or a head the transport's own checks refuse. */
  refuse(handle: H, reply: Reply, trace: RequestTrace | undefined): void {
    if (trace !== undefined) this.requestLog.finish(trace, reply.status);
    this.io.refuse(handle, reply);
  }

  private refused(handle: H, trace: RequestTrace | undefined): boolean {
    const problem = framingProblem(this.framing);
    if (problem === undefined) return false;
    this.refuse(handle, problem, trace);
    return true;
  }

  /**
   * Gathers the body under the route's cap and joins it once. A body over the cap is read and
   * dropped up to OVERSIZE_DRAIN_BYTES past it, then answered 413 with the connection kept; one
   * declared or sent larger still is answered at once and the connection closed (framing.ts).
   */
  private readBody(
    handle: H,
    route: CompiledRoute,
    handler: RequestHandler,
    head: RequestHead,
    rest: string,
    trace: RequestTrace | undefined,
  ): void {
    const max = route.maxBodyBytes;
    const length = this.framing.contentLength;
    const declared = length === '' ? -1 : Number(length); // digits only: framingProblem checked it
    if (declared > max + OVERSIZE_DRAIN_BYTES) {
      this.answer(handle, errorTextReply(route.bodyTooLarge(declared, max)), false, true, trace);
      return;
    }
    const changesState = route.changesState.has(head.method);
    if (declared <= 0 && this.framing.transferEncoding === undefined) {
      const empty = new ApiRequest(head, rest, EMPTY_BODY);
      if (changesState) this.held(handle, handler, empty, false, trace);
      else this.run(handle, handler, empty, true, false, trace);
      return;
    }
    let request: ApiRequest | undefined;
    let gone = false;
    this.io.onGone(handle, () => {
      gone = true;
      request?.abort();
    });
    const chunks: Buffer[] = [];
    let size = 0;
    /** Set once the body is over its cap: the rest is read and dropped, then this is the answer. */
    let tooLarge: Reply | undefined = declared > max ? errorTextReply(route.bodyTooLarge(declared, max)) : undefined;
    this.io.readBody(handle, (chunk, isLast) => {
      if (gone) return;
      size += chunk.byteLength;
      if (size > max && tooLarge === undefined) tooLarge = errorTextReply(route.bodyTooLarge(size, max));
      if (tooLarge !== undefined) {
        const overflow = size > max + OVERSIZE_DRAIN_BYTES;
        if (!isLast && !overflow) return;
        gone = true;
        this.answerLate(handle, tooLarge, overflow || head.closeConnection, trace);
        return;
      }
      if (chunk.byteLength > 0) chunks.push(this.io.keep(chunk));
      if (!isLast) return;
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : joined(chunks, size);
      request = new ApiRequest(head, rest, body);
      if (changesState) this.held(handle, handler, request, true, trace);
      else this.run(handle, handler, request, true, true, trace);
    });
  }

  /**
   * Runs a request that may change state only once the transport can answer it: uWS closes a
   * connection whose next request it parses before the answer is written (it serves pipelined
   * requests only when answered at once), so such a request runs after the read that brought it,
   * not at all if the connection was closed meanwhile, and the connection is not read again
   * until it is answered (docs/decisions.md#held-writes).
   */
  private held(
    handle: H,
    handler: RequestHandler,
    req: ApiRequest,
    goneHooked: boolean,
    trace: RequestTrace | undefined,
  ): void {
    if (!goneHooked) this.io.onGone(handle, () => req.abort());
    this.io.hold(handle, () => {
      if (!req.aborted) this.run(handle, handler, req, false, true, trace, true);
    });
  }

  /**
   * Runs a handler; answers at once, when its promise settles, or when its parked read wakes.
   * `inHandler`: still inside the transport's request or body callback. `goneHooked`: the body read
   * already asked to hear of the client going away (a transport may take one such hook only).
   * `held`: run by the transport's hold; a late answer holds the connection's reads until then (see held()).
   */
  private run(
    handle: H,
    handler: RequestHandler,
    req: ApiRequest,
    inHandler: boolean,
    goneHooked: boolean,
    trace: RequestTrace | undefined,
    held = false,
  ): void {
    let result: Outcome;
    try {
      result = handler(req);
    } catch (err) {
      result = errorReply(err, this.log, req.head.path);
    }
    const close = req.head.closeConnection;
    if (result instanceof Parked) {
      const deliver: Deliver<H> =
        trace === undefined ? this.deliverLate : (h, reply, c) => this.answerLate(h, reply, c, trace);
      const detach = result.attach(handle, deliver, close);
      if (goneHooked) req.onAbort(detach);
      else this.io.onGone(handle, detach);
      return;
    }
    if (!(result instanceof Promise)) {
      const stream = result.stream;
      if (stream !== undefined) {
        // The one hook on the client going, before the transport opens the stream.
        if (goneHooked) req.onAbort(() => stream.close());
        else this.io.onGone(handle, () => stream.close());
      }
      if (inHandler) this.answer(handle, result, false, close, trace);
      else this.answerLate(handle, result, close, trace);
      return;
    }
    if (!goneHooked) this.io.onGone(handle, () => req.abort());
    if (held) this.io.holdReads(handle);
    const finish = (reply: Reply): void => {
      if (req.aborted) {
        reply.stream?.close();
        return;
      }
      req.aborted = true; // answered: a later abort or second answer is a no-op
      if (held) this.io.release(handle);
      if (reply.stream !== undefined) {
        // Its client going could no longer be told to it (reply.ts).
        reply.stream.close();
        reply = errorReply(new Error('a streamed reply came through a promise'), this.log, req.head.path);
      }
      this.answerLate(handle, reply, close, trace);
    };
    result.then(finish, (err: unknown) => finish(errorReply(err, this.log, req.head.path)));
  }

  private answer(handle: H, reply: Reply, head: boolean, close: boolean, trace: RequestTrace | undefined): void {
    if (trace !== undefined) this.requestLog.finish(trace, reply.status);
    this.io.write(handle, reply, head, close);
  }

  private answerLate(handle: H, reply: Reply, close: boolean, trace: RequestTrace | undefined): void {
    if (trace !== undefined) this.requestLog.finish(trace, reply.status);
    this.io.writeLate(handle, reply, close);
  }
}

function joined(chunks: Buffer[], size: number): Buffer {
  return chunks.length === 0 ? EMPTY_BODY : Buffer.concat(chunks, size);
}
