// A cluster agent's cached leaves kept on disk beside its etcd view, so that an agent restarted while
// etcd is down still answers the leaves it held (docs/cluster-security.md#the-leaf-cache-on-disk).
// The file holds the leaves' private keys: it is written with mode 0600 (a temp file of that mode,
// renamed into place), at most once per interval after a leaf changes, and on close.
import { readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { Logger } from '../../core/log.js';
import type { CachedLeaf } from './leaf-manager.js';
import { PRIVATE_FILE_MODE } from '../../core/private-files.js';

export const LEAF_CACHE_FILE = 'leaf-cache.json';
const LEAF_CACHE_TEMP_FILE = 'leaf-cache.tmp';
const FORMAT_VERSION = 1;
/** A first-leaf wave issues thousands of leaves in a second: one write covers them all. */
const DEFAULT_SAVE_INTERVAL_MS = 1_000;

type StoredLeaf = Omit<CachedLeaf, 'serial'> & { readonly serial: string };

const STRING_FIELDS = [
  'serialNumber',
  'certPem',
  'privateKeyPem',
  'uri',
  'signingKeyId',
  'namespace',
  'service',
] as const;
const NUMBER_FIELDS = ['validAfter', 'validBefore', 'index', 'issuedAt', 'renewAt'] as const;

export class LeafCacheFile {
  private readonly path: string;
  private timer: TimerHandle | undefined;
  private writing: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    dataDir: string,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly intervalMs = DEFAULT_SAVE_INTERVAL_MS,
  ) {
    this.path = join(dataDir, LEAF_CACHE_FILE);
  }

  /** The leaves kept, those still valid now; none when there is no file or it is damaged (with a warning). */
  async load(): Promise<CachedLeaf[]> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
        this.log.warn({ err, path: this.path }, 'could not read the leaf cache; starting without it');
      return [];
    }
    try {
      const parsed = JSON.parse(text) as { version?: unknown; leaves?: unknown };
      if (parsed.version !== FORMAT_VERSION || !Array.isArray(parsed.leaves)) throw new Error('not a leaf cache');
      const now = this.clock.now();
      return parsed.leaves.flatMap((raw: unknown) => {
        const leaf = decodeLeaf(raw);
        return leaf !== undefined && leaf.validBefore > now ? [leaf] : [];
      });
    } catch (err) {
      this.log.warn({ err, path: this.path }, 'the leaf cache on disk is damaged; starting without it');
      return [];
    }
  }

  /** Writes `held()` once the interval has passed (one pending write however many leaves change). */
  saveSoon(held: () => readonly CachedLeaf[]): void {
    if (this.closed || this.timer !== undefined) return;
    this.timer = this.clock.setTimer(this.intervalMs, () => {
      this.timer = undefined;
      void this.write(held());
    });
  }

  /** Writes the leaves held now, after any write in progress; nothing is written after this. */
  async close(held: readonly CachedLeaf[]): Promise<void> {
    this.closed = true;
    this.timer?.cancel();
    this.timer = undefined;
    await this.write(held);
  }

  private write(leaves: readonly CachedLeaf[]): Promise<void> {
    const body = JSON.stringify({
      version: FORMAT_VERSION,
      leaves: leaves.map((l) => ({ ...l, serial: l.serial.toString() })),
    });
    this.writing = this.writing.then(async () => {
      const temp = join(this.path, '..', LEAF_CACHE_TEMP_FILE);
      try {
        // A temp file left by a crash may have another mode: `mode` applies only to a new file.
        await unlink(temp).catch(() => undefined);
        await writeFile(temp, body, { mode: PRIVATE_FILE_MODE });
        await rename(temp, this.path);
      } catch (err) {
        this.log.warn({ err, path: this.path }, 'could not write the leaf cache to disk');
      }
    });
    return this.writing;
  }
}

function decodeLeaf(raw: unknown): CachedLeaf | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const leaf = raw as Record<string, unknown>;
  if (typeof leaf.serial !== 'string' || !/^\d+$/.test(leaf.serial)) return undefined;
  for (const field of STRING_FIELDS) if (typeof leaf[field] !== 'string') return undefined;
  for (const field of NUMBER_FIELDS) if (typeof leaf[field] !== 'number') return undefined;
  const s = leaf as unknown as StoredLeaf;
  // Field by field in leaf-manager.ts's order, so a restored leaf shares the issued ones' shape.
  return {
    serial: BigInt(s.serial),
    serialNumber: s.serialNumber,
    certPem: s.certPem,
    privateKeyPem: s.privateKeyPem,
    uri: s.uri,
    validAfter: s.validAfter,
    validBefore: s.validBefore,
    index: s.index,
    signingKeyId: s.signingKeyId,
    namespace: s.namespace,
    service: s.service,
    issuedAt: s.issuedAt,
    renewAt: s.renewAt,
  };
}
