// A client agent's writes, run by a server agent (docs/decisions.md D25; the mailbox and its
// deadline: src/cluster/write-forwarding.ts). On a client, every method but GET of the routes that
// change shared state keeps its parse phase and its ACL requirement (a refusal costs no round trip)
// and hands the request, with the caller's effective token, to a server. The server runs it through
// a route table of those methods only, in the request flow its transports run (forwarded-transport.ts),
// behind its own ACL gate: the requirement is checked again there, the same validation applies, and
// nothing else (an agent's own endpoints) can be reached.
// The reply goes back sealed to a one-time key of the asker's (acl/sealed.ts, as token secrets are
// shown: docs/decisions.md D23): replies are readable by every client agent, and a token's reply
// carries its secret.
import { z } from 'zod';
import { ANONYMOUS_SECRET } from '../acl/builtin.js';
import { replyKey, seal, type Sealed } from '../acl/sealed.js';
import { agentError } from '../core/errors.js';
import type { Logger } from '../core/log.js';
import { wholeRequestServer } from './forwarded-transport.js';
import type { Header, Reply } from './reply.js';
import type { ApiRequest, RequestHead } from './request.js';
import { parsedMethod, type Method, type MethodSpec, type ParsedMethod, type Route } from './route-types.js';
import type { CompiledRoute } from './routes.js';
import { effectiveToken } from './token.js';

/** A write as a client agent hands it over: the request, less what its transport alone knows. */
export interface ForwardedWrite {
  readonly Method: string;
  /** Still percent-encoded, as the client received it. */
  readonly Path: string;
  readonly Query: string;
  /** The caller's effective token (its own, else the client agent's default, else anonymous). */
  readonly Token: string;
  readonly Namespace: string;
  /** base64; absent for a method without a body. */
  readonly Body?: string;
  /** The asker's one-time X25519 public key: the reply is sealed to it. */
  readonly ReplyKey: string;
  /** The asking agent's node (RequestHead.originNode); absent from an agent before sessions. */
  readonly Node?: string;
}

const forwardedWriteSchema = z.object({
  Method: z.string(),
  Path: z.string().startsWith('/'),
  Query: z.string(),
  Token: z.string(),
  Namespace: z.string(),
  Body: z.base64().exactOptional(),
  ReplyKey: z.string(),
  Node: z.string().exactOptional(),
}) satisfies z.ZodType<ForwardedWrite>;

const forwardedReplySchema = z.object({
  Status: z.number().int(),
  ContentType: z.string().exactOptional(),
  Headers: z.array(z.tuple([z.string(), z.string()])),
  Body: z.base64().exactOptional(),
});
type ForwardedReply = z.infer<typeof forwardedReplySchema>;

/** Whether a method of a state route changes shared state: all but reads. */
const isWrite = (method: string): boolean => method !== 'GET';

/** The state routes with every write method answered by `forward` (a client agent's table). */
export function forwardingRoutes(
  routes: readonly Route[],
  forward: (write: ForwardedWrite) => Promise<unknown>,
  defaultToken: () => string | undefined,
  nodeName: string,
): Route[] {
  const handler = async (req: ApiRequest): Promise<Reply> =>
    forwardedCall(forward, {
      Node: nodeName,
      Method: req.method,
      Path: req.head.path,
      Query: req.head.rawQuery,
      Token: effectiveToken(req, defaultToken()),
      Namespace: req.head.namespaceHeader,
      ...(req.body !== undefined && req.body.length > 0 ? { Body: req.body.toString('base64') } : {}),
    });
  return mapWriteMethods(routes, (spec) => withHandler(spec, handler));
}

/** Hands one write to a server through `forward` and opens its reply (also the agent's own catalog sync). */
export async function forwardedCall(
  forward: (write: ForwardedWrite) => Promise<unknown>,
  write: Omit<ForwardedWrite, 'ReplyKey'>,
): Promise<Reply> {
  const key = replyKey();
  const sealed = await forward({ ...write, ReplyKey: key.publicKey });
  let opened: unknown;
  try {
    opened = key.open(sealed as Sealed);
  } catch {
    throw agentError('CLUSTER_FORWARD_FAILED', { detail: 'the reply did not open' });
  }
  const read = forwardedReplySchema.safeParse(opened);
  if (!read.success) throw agentError('CLUSTER_FORWARD_FAILED', { detail: 'the reply is not an HTTP reply' });
  return fromForwarded(read.data);
}

/** The write methods of the state routes alone (a server agent's table for forwarded writes). */
export function writeRoutes(routes: readonly Route[]): Route[] {
  return mapWriteMethods(routes, (spec) => spec, true);
}

/**
 * Runs a forwarded write through `routes` (compiled from writeRoutes, behind the server's ACL gate)
 * in the request flow a transport runs (forwarded-transport.ts); resolves to the reply sealed to the asker.
 */
export function forwardedWriteRunner(
  routes: readonly CompiledRoute[],
  log: Logger,
): (write: unknown) => Promise<unknown> {
  const serve = wholeRequestServer(routes, log, 'forwarded');
  return async (body) => {
    const read = forwardedWriteSchema.safeParse(body);
    if (!read.success) throw agentError('CLUSTER_FORWARD_FAILED', { detail: 'malformed forwarded write' });
    const write = read.data;
    const head: RequestHead = {
      method: write.Method,
      path: write.Path,
      rawQuery: write.Query,
      // Never the server's own default token: no token is the anonymous one.
      tokenHeader: write.Token === '' ? ANONYMOUS_SECRET : write.Token,
      authorization: '',
      namespaceHeader: write.Namespace,
      closeConnection: false,
      originNode: write.Node,
    };
    const reply = await serve({ head, body: write.Body === undefined ? undefined : Buffer.from(write.Body, 'base64') });
    return seal(toForwarded(reply), write.ReplyKey);
  };
}

function toForwarded(reply: Reply): ForwardedReply {
  const body = reply.body === undefined ? {} : { Body: Buffer.from(reply.body).toString('base64') };
  const type = reply.contentType === undefined ? {} : { ContentType: reply.contentType };
  return { Status: reply.status, Headers: (reply.headers ?? []).map(([n, v]) => [n, v]), ...type, ...body };
}

function fromForwarded(f: ForwardedReply): Reply {
  const headers: Header[] = f.Headers;
  return {
    status: f.Status,
    headers,
    ...(f.ContentType === undefined ? {} : { contentType: f.ContentType }),
    ...(f.Body === undefined ? {} : { body: Buffer.from(f.Body, 'base64') }),
  };
}

/** Each route with its write methods mapped (`only`: its read methods dropped, and routes left without methods). */
function mapWriteMethods(
  routes: readonly Route[],
  map: (spec: MethodSpec | ParsedMethod) => MethodSpec | ParsedMethod,
  only = false,
): Route[] {
  const out: Route[] = [];
  for (const route of routes) {
    const methods: Partial<Record<Method, MethodSpec | ParsedMethod>> = {};
    for (const [method, spec] of Object.entries(route.methods) as [Method, MethodSpec | ParsedMethod][]) {
      if (isWrite(method)) methods[method] = map(spec);
      else if (!only) methods[method] = spec;
    }
    if (Object.keys(methods).length > 0) out.push({ ...route, methods });
  }
  return out;
}

/** The method with its parse phase and ACL requirement, and `handler` in place of its own. */
function withHandler(
  spec: MethodSpec | ParsedMethod,
  handler: (req: ApiRequest) => Promise<Reply>,
): MethodSpec | ParsedMethod {
  if (!('open' in spec)) return { acl: spec.acl, handler: (req) => handler(req) };
  return spec.open((parsed) => parsedMethod({ parse: parsed.parse, acl: parsed.acl, handler: (req) => handler(req) }));
}
