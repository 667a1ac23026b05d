// The request as handlers see it: everything copied out of uWS before the handler runs, so it
// stays valid across awaits. Abort notification is the adapter's to fire.
import { EMPTY_QUERY, Query } from './query.js';

export interface RequestHead {
  /** The method as sent (case-sensitive, as Go compares it). */
  readonly method: string;
  /** The raw (still percent-encoded) path, without the query. */
  readonly path: string;
  readonly rawQuery: string;
  /** `X-Svc-Token`, else `X-Consul-Token`. */
  readonly tokenHeader: string;
  readonly authorization: string;
  /** `X-Svc-Namespace`, else `X-Consul-Namespace`. */
  readonly namespaceHeader: string;
  /** The client asked for `Connection: close`. */
  readonly closeConnection: boolean;
  /**
   * A write a client agent forwarded: that agent's node, what "this agent" means to the handler (a
   * session's default node), as Consul's client agent fills it in before its RPC. Absent otherwise.
   */
  readonly originNode?: string | undefined;
}

export class ApiRequest {
  aborted = false;
  private abortHandlers: (() => void)[] | undefined;
  private parsedQuery: Query | undefined;

  constructor(
    readonly head: RequestHead,
    /** For prefix routes, the decoded rest of the path after the prefix (a KV key, a name). */
    readonly rest: string,
    readonly body: Buffer | undefined,
  ) {}

  get method(): string {
    return this.head.method;
  }

  get query(): Query {
    if (this.parsedQuery) return this.parsedQuery;
    return (this.parsedQuery = this.head.rawQuery === '' ? EMPTY_QUERY : new Query(this.head.rawQuery));
  }

  get pretty(): boolean {
    return this.head.rawQuery !== '' && this.query.has('pretty');
  }

  /** Registers a callback for a client that goes away before the reply is written. */
  onAbort(fn: () => void): void {
    // A client already gone (say, during an await before parking) still gets its cleanup.
    if (this.aborted) fn();
    else (this.abortHandlers ??= []).push(fn);
  }

  /** Called by the adapter only. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const handlers = this.abortHandlers;
    this.abortHandlers = undefined;
    if (handlers) for (const fn of handlers) fn();
  }
}
