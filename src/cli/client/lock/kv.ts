// The KV reads and writes a lock makes (Consul's api/kv.go: Get, List, Acquire, Release, CAS,
// DeleteCAS), on the client's requests; an answer it did not expect is a StatusError.
import { answerIndex, type Answer, type ApiClient } from '../api.js';
import { StatusError } from './errors.js';

/** A KV entry as read; Flags as decimal text (a uint64 a number would round). */
export interface Pair {
  readonly Key: string;
  readonly Flags: string;
  readonly Value: string | null;
  readonly Session?: string;
  readonly ModifyIndex: number;
}

interface ReadOptions {
  readonly index?: string | undefined;
  readonly waitMs?: number | undefined;
  readonly consistent?: boolean;
}

/** The KV reads and writes of a lock, on the client's requests. */
export class Kv {
  constructor(private readonly api: ApiClient) {}

  async get(key: string, options: ReadOptions = {}): Promise<{ pair: Pair | undefined; index: string }> {
    const { pairs, index } = await this.read(keyPath(key), options);
    return { pair: pairs[0], index };
  }

  list(prefix: string, options: ReadOptions = {}): Promise<{ pairs: Pair[]; index: string }> {
    return this.read(`${keyPath(prefix)}?recurse`, options);
  }

  /** A PUT's `true` or `false` (acquire, release, cas). */
  async put(key: string, query: Readonly<Record<string, string | number>>, body = ''): Promise<boolean> {
    return outcome(await this.api.call('PUT', `${keyPath(key)}?${queryText(query)}`, body));
  }

  async delete(key: string, query: Readonly<Record<string, string | number>> = {}): Promise<boolean> {
    const q = queryText(query);
    return outcome(await this.api.call('DELETE', q === '' ? keyPath(key) : `${keyPath(key)}?${q}`));
  }

  private async read(path: string, options: ReadOptions): Promise<{ pairs: Pair[]; index: string }> {
    const extra = [
      ...(options.consistent === true ? ['consistent'] : []),
      ...(options.index === undefined ? [] : [`index=${options.index}`]),
      ...(options.waitMs === undefined ? [] : [`wait=${Math.max(1, Math.ceil(options.waitMs))}ms`]),
    ];
    const sep = path.includes('?') ? '&' : '?';
    const answer = await this.api.call('GET', extra.length === 0 ? path : `${path}${sep}${extra.join('&')}`);
    const index = answerIndex(answer);
    if (answer.status === 404) return { pairs: [], index };
    if (answer.status !== 200) throw new StatusError(answer.status, answer.text);
    // Flags become strings before parsing: the lock's two flag values are past 2^53.
    return { pairs: JSON.parse(answer.text.replace(/"Flags":\s*(\d+)/g, '"Flags":"$1"')) as Pair[], index };
  }
}

const keyPath = (key: string): string => `/v1/kv/${key.split('/').map(encodeURIComponent).join('/')}`;

const queryText = (query: Readonly<Record<string, string | number>>): string =>
  Object.entries(query)
    .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
    .join('&');

function outcome(answer: Answer): boolean {
  if (answer.status !== 200) throw new StatusError(answer.status, answer.text);
  return answer.text.trim() === 'true';
}
