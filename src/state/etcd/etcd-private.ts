// Keys under `<prefix>private/`, outside the shared view (etcd-keys.ts): read through from etcd on
// demand, never watched, so an agent that does not ask never holds them. Server agents keep the
// CA keys here; etcd's RBAC denies the range to client agents (docs/cluster-security.md).
import type { EtcdConnection, EtcdTarget } from './etcd-client.js';
import { openConnection } from './etcd-client.js';
import { EtcdKeyLayout } from './etcd-keys.js';
import { etcdError } from './etcd-errors.js';
import { DEFAULT_ETCD_PREFIX } from './etcd-store.js';

export interface EtcdPrivateRange {
  /** The JSON value at `<prefix>private/<path>`, or undefined. */
  get<V>(path: string): Promise<V | undefined>;
  /** Writes it unless the key exists; true if this call created it. */
  create(path: string, value: unknown): Promise<boolean>;
  delete(path: string): Promise<void>;
  /** Every key under `<prefix>private/<path>` with the revision that created it, and the revision read at. */
  list(path: string): Promise<{
    readonly revision: number;
    readonly keys: { readonly path: string; readonly createRevision: number }[];
  }>;
  close(): void;
}

export interface EtcdPrivateOptions {
  readonly etcd: EtcdTarget;
  readonly prefix?: string | undefined;
  /** Deadline of each call (default 1500 ms, as a commit's). */
  readonly timeoutMs?: number | undefined;
}

export function openEtcdPrivateRange(options: EtcdPrivateOptions): EtcdPrivateRange {
  const layout = new EtcdKeyLayout(options.prefix ?? DEFAULT_ETCD_PREFIX);
  return new PrivateRange(openConnection(options.etcd), layout.privateRoot, options.timeoutMs ?? 1_500);
}

class PrivateRange implements EtcdPrivateRange {
  constructor(
    private readonly connection: EtcdConnection,
    private readonly root: string,
    private readonly timeoutMs: number,
  ) {}

  private key(path: string): Buffer {
    return Buffer.from(`${this.root}${path}`, 'utf8');
  }

  async get<V>(path: string): Promise<V | undefined> {
    try {
      const kv = await this.connection.getKey(this.key(path), this.timeoutMs);
      return kv === undefined ? undefined : (JSON.parse(kv.value.toString('utf8')) as V);
    } catch (err) {
      throw etcdError(err);
    }
  }

  async create(path: string, value: unknown): Promise<boolean> {
    const key = this.key(path);
    try {
      const res = await this.connection.txn(
        {
          compares: [{ key, target: 'create', equals: 0 }],
          success: [{ op: 'put', key, value: Buffer.from(JSON.stringify(value), 'utf8') }],
          failure: [],
        },
        this.timeoutMs,
      );
      return res.succeeded;
    } catch (err) {
      throw etcdError(err);
    }
  }

  async delete(path: string): Promise<void> {
    try {
      await this.connection.txn(
        { compares: [], success: [{ op: 'delete', key: this.key(path) }], failure: [] },
        this.timeoutMs,
      );
    } catch (err) {
      throw etcdError(err);
    }
  }

  async list(path: string): Promise<{
    readonly revision: number;
    readonly keys: { readonly path: string; readonly createRevision: number }[];
  }> {
    try {
      const { revision, kvs } = await this.connection.rangePrefix(this.key(path), this.timeoutMs);
      return {
        revision,
        keys: kvs.map((kv) => ({ path: kv.key.slice(this.root.length), createRevision: kv.createRevision })),
      };
    } catch (err) {
      throw etcdError(err);
    }
  }

  close(): void {
    this.connection.close();
  }
}
