// What a handler returns: a status, an optional body and its type, and extra headers. The adapter
// adds the agent-wide headers and writes it; handlers never see the transport.
import type { AgentError, ErrorKind } from '../core/errors.js';
import { encodeJson } from './json.js';

export type Header = readonly [name: string, value: string];

export interface Reply {
  readonly status: number;
  readonly body?: string | Uint8Array;
  readonly contentType?: string;
  readonly headers?: readonly Header[];
  /**
   * A body sent as it comes, chunked, until the stream ends it or the client goes (GET
   * /v1/agent/monitor); `body` is then unused. Only a reply a handler returns at once streams: one
   * through a promise is answered 500 (the flow has handed its one hook on the client going to the promise).
   */
  readonly stream?: ReplyStream;
}

/** A streamed body: the transport writes the head, then opens the stream on its socket. */
export interface ReplyStream {
  open(sink: StreamSink): void;
  /** The client went away (or the stream cannot be sent): write nothing more to the sink. */
  close(): void;
}

/** The transport's side of a streamed body. */
export interface StreamSink {
  /** Sends a chunk; false when the socket holds unsent bytes (a slow reader): wait for `drained`. */
  write(chunk: string): boolean;
  /** Calls `fn` once the bytes held are sent. */
  drained(fn: () => void): void;
  /** Ends the body (the stream ends: the agent stops). */
  end(): void;
}

export const JSON_TYPE = 'application/json';
export const TEXT_TYPE = 'text/plain; charset=utf-8';

export function jsonReply(value: unknown, pretty: boolean, headers?: readonly Header[]): Reply {
  const body = encodeJson(value, pretty);
  return headers
    ? { status: 200, body, contentType: JSON_TYPE, headers }
    : { status: 200, body, contentType: JSON_TYPE };
}

export function textReply(status: number, message: string, headers?: readonly Header[]): Reply {
  return headers
    ? { status, body: message, contentType: TEXT_TYPE, headers }
    : { status, body: message, contentType: TEXT_TYPE };
}

/** A catalogue error as a reply: its kind's status and its message as text, with any headers (a read's index). */
export function errorTextReply(err: AgentError, headers?: readonly Header[]): Reply {
  return textReply(STATUS_BY_KIND[err.kind], err.message, headers);
}

/** 200 with an empty body and no Content-Type, as Consul answers most writes and deletes. */
export const EMPTY_OK: Reply = Object.freeze({ status: 200 });

export const STATUS_BY_KIND: Readonly<Record<ErrorKind, number>> = {
  invalid: 400,
  unauthorized: 401,
  'permission-denied': 403,
  'not-found': 404,
  'method-not-allowed': 405,
  'length-required': 411,
  conflict: 409,
  'too-large': 413,
  unsupported: 415,
  'rate-limited': 429,
  'not-implemented': 501,
  internal: 500,
  unavailable: 503,
};

export const STATUS_LINE: Readonly<Record<number, string>> = {
  200: '200 OK',
  301: '301 Moved Permanently',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  411: '411 Length Required',
  408: '408 Request Timeout',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  431: '431 Request Header Fields Too Large',
  500: '500 Internal Server Error',
  501: '501 Not Implemented',
  503: '503 Service Unavailable',
};
