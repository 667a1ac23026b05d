// Rendered catalog and health answers, kept until their data's index moves: a repeated read (or a
// wake-up of parked reads with the same view) costs a lookup and a buffer write, not a re-render.
// Keys carry every part of the request that shapes the body and the ACL view that filtered it; the
// memory is bounded in bytes. Guarded by bench/sizing/catalog.ts.
import { LRUCache } from 'lru-cache';
import type { Authorizer } from '../acl/types.js';

/** A rendered body, valid while its data's stamp holds. */
export interface RenderedAnswer {
  readonly stamp: number;
  readonly body: Uint8Array;
  /** The ACL view dropped something: the results-filtered header goes with this body. */
  readonly filtered: boolean;
}

export interface RenderCacheOptions {
  /** Bodies plus keys kept, in bytes (docs/decisions.md D7: every cache is bounded). */
  readonly maxBytes: number;
}

/**
 * The agent's bound: ~90 answers of 1,000 instances (~730 KB apiece, bench/sizing/catalog.ts), held
 * as Buffers outside the V8 heap; 50,000 instances take ~60 MiB of heap (bench/probes/catalog-heap.ts).
 */
export const DEFAULT_RENDER_CACHE_BYTES = 64 * 1024 * 1024;

/**
 * Each entry's bookkeeping beside its body and key: the entry object, the LRU's slots and the map
 * node, rounded up (a 1,000-instance answer is ~700 KB, so this matters only for tiny answers).
 */
const ENTRY_OVERHEAD_BYTES = 200;
/** One answer may take at most this share of the bound, so a huge one cannot flush all the others. */
const MAX_ENTRY_SHARE = 4;

/** The view of a token that may read every service and every node. */
const SEES_ALL = 0;

export class RenderCache {
  private readonly entries: LRUCache<string, RenderedAnswer> | undefined;
  /** One number per compiled authorizer: a token whose policies change gets a new authorizer, so a new view. */
  private readonly views = new WeakMap<Authorizer, number>();
  private nextView = 1;
  private rendersCount = 0;

  constructor(options: RenderCacheOptions) {
    const maxSize = Math.floor(options.maxBytes);
    this.entries =
      maxSize <= 0
        ? undefined
        : new LRUCache<string, RenderedAnswer>({
            maxSize,
            maxEntrySize: Math.max(1, Math.floor(maxSize / MAX_ENTRY_SHARE)),
            sizeCalculation: (answer, key) => answer.body.byteLength + key.length * 2 + ENTRY_OVERHEAD_BYTES,
          });
  }

  /**
   * The ACL view of `authorizer`, for a cache key. Catalog answers are filtered by service:read and
   * node:read only, so every token that may read all services and all nodes (a mesh's sidecars by
   * their service identities, management, ACLs off) sees them whole: they share view 0. Any other
   * authorizer has a view of its own, even beside one with equal rules (exact, one entry each).
   */
  viewOf(authorizer: Authorizer): number {
    if (authorizer.allAllowed('service', 'read') && authorizer.allAllowed('node', 'read')) return SEES_ALL;
    let view = this.views.get(authorizer);
    if (view === undefined) {
      view = this.nextView++;
      this.views.set(authorizer, view);
    }
    return view;
  }

  /** The answer kept for `key` at `stamp`, else `render`'s, kept for the next read at that stamp. */
  answer(key: string, stamp: number, render: () => Omit<RenderedAnswer, 'stamp'>): RenderedAnswer {
    const kept = this.entries?.get(key);
    if (kept !== undefined && kept.stamp === stamp) return kept;
    this.rendersCount++;
    const fresh = { stamp, ...render() };
    this.entries?.set(key, fresh);
    return fresh;
  }

  /** Bodies rendered since start (a hit renders none). */
  get renders(): number {
    return this.rendersCount;
  }

  /** Bytes held by the kept answers (at most maxBytes). */
  get bytes(): number {
    return this.entries?.calculatedSize ?? 0;
  }
}
