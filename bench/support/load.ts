// The shape every load generator (wrk, autocannon) takes and returns, so a scenario can run on
// either and a ratio always has the same tool on both sides.

export type Method = 'GET' | 'PUT' | 'POST';

export interface LoadRequest {
  url: string;
  method: Method;
  /** Sent as the raw body (PUT, POST). */
  body?: string;
  /**
   * Instead of `body`: one body per request, in turn (wrk only, through a Lua request() function
   * handing out requests built once, so every row driven this way pays the same client cost).
   */
  bodies?: readonly string[];
  /** Paths (with their query) handed out in turn the same way, instead of the URL's (wrk only). */
  paths?: readonly string[];
  /** Extra request headers (an ACL token, say); printable ASCII. */
  headers?: Readonly<Record<string, string>>;
  /** Ask the server to close after each response, to measure connection set-up instead of reuse. */
  close?: boolean;
}

export interface LoadSettings {
  durationS: number;
  connections: number;
  /** Client threads; only wrk uses it (autocannon is one event loop). */
  threads: number;
}

export interface LoadResult {
  tool: string;
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Socket errors and timeouts, all kinds summed. */
  errors: number;
  /** Responses outside 2xx/3xx: any at all means the row measured the wrong thing. */
  non2xx: number;
}

export interface LoadTool {
  readonly name: 'wrk' | 'autocannon';
  readonly version: string;
  run(request: LoadRequest, settings: LoadSettings): Promise<LoadResult>;
}
