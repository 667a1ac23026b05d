// The server side of a forwarded write as one more transport of the request flow (request-flow.ts):
// a request handed over whole, head and body (docs/decisions.md D25), is matched, checked, run and
// answered by the code that serves a socket (404, 405, the body cap, the ACL gate, error replies,
// late and parked answers), and its answer is captured for the asker. There is no connection: the
// body is one piece, nothing is pipelined behind the request, and the asker cannot go away while it
// runs (its deadline is its own: src/cluster/write-forwarding.ts).
import type { Logger } from '../core/log.js';
import { noteFramingHeader, resetFraming } from './framing.js';
import type { Reply } from './reply.js';
import type { RequestHead } from './request.js';
import { matchedRoute, RequestFlow, type TransportIo } from './request-flow.js';
import { RouteMatcher } from './route-match.js';
import type { CompiledRoute } from './routes.js';

/** A request that arrives whole: its head, and its body when it carries one. */
export interface WholeRequest {
  readonly head: RequestHead;
  readonly body: Buffer | undefined;
}

/** One request in flight: its body, and where its answer goes. */
interface Exchange {
  readonly body: Buffer;
  readonly answer: (reply: Reply) => void;
}

const EMPTY_BODY = Buffer.alloc(0);

// The answer goes back whole, a HEAD's body included: the transport that writes it drops that itself.
const io: TransportIo<Exchange, Buffer> = {
  write: (exchange, reply) => exchange.answer(reply),
  writeLate: (exchange, reply) => exchange.answer(reply),
  refuse: (exchange, reply) => exchange.answer(reply),
  onGone: () => {},
  readBody: (exchange, piece) => piece(exchange.body, true),
  keep: (chunk) => chunk,
  hold: (_exchange, run) => run(),
  holdReads: () => {},
  release: () => {},
};

/** Serves requests that arrive whole through `routes`; each resolves to its answer. At debug, each is logged as a transport's are. */
export function wholeRequestServer(
  routes: readonly CompiledRoute[],
  log: Logger,
  from: string,
): (request: WholeRequest) => Promise<Reply> {
  const flow = new RequestFlow(io, log, undefined);
  const requestLog = flow.requestLog;
  const matcher = new RouteMatcher(routes);
  return ({ head, body }) =>
    new Promise((answer) => {
      const match = matcher.match(head.path);
      const trace = requestLog.debug
        ? requestLog.start(matchedRoute(match, head.path), head.method, {
            path: head.path,
            rawQuery: head.rawQuery,
            from,
          })
        : undefined;
      // The flow reads the framing before anything else, in this same call.
      resetFraming(flow.framing);
      if (body !== undefined) noteFramingHeader(flow.framing, 'content-length', String(body.byteLength));
      flow.matched({ body: body ?? EMPTY_BODY, answer }, match, head, trace);
    });
}
