// Torn tails are cut and logged; damage anywhere else refuses to open rather than drop acked data.
import { appendFile, readFile, readdir, stat, truncate, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/core/log.js';
import { openEmbeddedStore } from '../../../../src/state/embedded/embedded-store.js';
import { segmentPath } from '../../../../src/state/state-files.js';
import { recordingLogger, setDurableMark, tempDirs } from '../support.js';

const dirs = tempDirs();
afterEach(dirs.cleanupDirs);

/**
 * Writes `n` commits one by one into a fresh data dir; returns the WAL size after each (ends[i]
 * after index i+1). The durable mark is left at n - 1: a torn last record is a batch that was
 * never acknowledged, so never marked.
 */
async function writeCommits(n: number): Promise<{ dataDir: string; wal: string; ends: number[] }> {
  const dataDir = await dirs.make();
  const store = await openEmbeddedStore({ dataDir, log: silentLogger });
  const wal = segmentPath(join(dataDir, 'state'), 1);
  const ends: number[] = [];
  for (let i = 1; i <= n; i++) {
    await store.commit([{ op: 'set', table: 'kv', key: `k${i}`, value: `value-${i}` }]);
    ends.push((await stat(wal)).size);
  }
  await store.close();
  await setDurableMark(dataDir, n - 1);
  return { dataDir, wal, ends };
}

/** Splits the single WAL into segments starting at the given indexes (as rotation would). */
async function splitWal(dataDir: string, wal: string, ends: number[], firstIndexes: number[]): Promise<void> {
  const buf = await readFile(wal);
  await unlink(wal);
  for (let s = 0; s < firstIndexes.length; s++) {
    const first = firstIndexes[s] as number;
    const next = firstIndexes[s + 1];
    const from = first === 1 ? 0 : (ends[first - 2] as number);
    const to = next === undefined ? buf.length : (ends[next - 2] as number);
    await writeFile(segmentPath(join(dataDir, 'state'), first), buf.subarray(from, to));
  }
}

function flip(buf: Buffer, at: number, mask: number): void {
  buf.writeUInt8(buf.readUInt8(at) ^ mask, at);
}

async function openError(dataDir: string): Promise<unknown> {
  return openEmbeddedStore({ dataDir, log: silentLogger }).then(
    async (store) => {
      await store.close();
      return undefined;
    },
    (err: unknown) => err,
  );
}

describe('torn tail of the WAL', () => {
  it('cuts a half-written last record, logs offset and dropped bytes, keeps everything before', async () => {
    const { dataDir, wal, ends } = await writeCommits(10);
    const lastStart = ends[8] as number;
    const cut = lastStart + Math.floor(((ends[9] as number) - lastStart) / 2);
    await truncate(wal, cut);

    const log = recordingLogger();
    const store = await openEmbeddedStore({ dataDir, log });
    expect(store.index).toBe(9);
    expect(store.get('kv', 'k9')?.value).toBe('value-9');
    expect(store.get('kv', 'k10')).toBeUndefined();
    expect(store.stats.recovery).toEqual({ snapshotIndex: 0, replayedRecords: 9, truncatedBytes: cut - lastStart });
    const warn = log.entries.find((e) => e.level === 'warn');
    expect(warn?.obj).toMatchObject({ offset: lastStart, droppedBytes: cut - lastStart, segment: wal });
    expect((await stat(wal)).size).toBe(lastStart);
    // The index clock continues from the last recovered record, and the new write survives.
    expect((await store.commit([{ op: 'set', table: 'kv', key: 'k10', value: 'again' }])).index).toBe(10);
    await store.close();
    const again = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(again.get('kv', 'k10')?.value).toBe('again');
    expect(again.stats.recovery.truncatedBytes).toBe(0);
    await again.close();
  });

  it('cuts garbage appended after the last record', async () => {
    const { dataDir, wal, ends } = await writeCommits(5);
    await appendFile(wal, Buffer.from('this is not a record at all, just noise'));
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(store.index).toBe(5);
    expect(store.stats.recovery.truncatedBytes).toBe(39);
    expect((await stat(wal)).size).toBe(ends[4]);
    await store.close();
  });

  it('cuts a zero-filled tail (a file extended but never written)', async () => {
    const { dataDir, wal } = await writeCommits(3);
    await appendFile(wal, Buffer.alloc(4096));
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(store.index).toBe(3);
    expect(store.stats.recovery.truncatedBytes).toBe(4096);
    await store.close();
  });

  it('cuts a last record whose checksum does not match', async () => {
    const { dataDir, wal, ends } = await writeCommits(4);
    const buf = await readFile(wal);
    flip(buf, (ends[3] as number) - 2, 0xff);
    await writeFile(wal, buf);
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(store.index).toBe(3);
    await store.close();
  });
});

describe('damage that is not a torn tail', () => {
  it('refuses a corrupt record with valid records after it', async () => {
    const { dataDir, wal, ends } = await writeCommits(10);
    const buf = await readFile(wal);
    flip(buf, (ends[4] as number) - 3, 0x01);
    await writeFile(wal, buf);
    expect(await openError(dataDir)).toMatchObject({ code: 'STATE_WAL_CORRUPT', kind: 'internal' });
    // Refusing must not have cut anything.
    expect((await stat(wal)).size).toBe(buf.length);
  });

  it('refuses a damaged length field in the middle, which hides where the next record starts', async () => {
    const { dataDir, wal, ends } = await writeCommits(10);
    const buf = await readFile(wal);
    // Record 6's length claims more bytes than the file has: it looks torn, but records follow.
    buf.writeUInt32LE(0x7fffffff, ends[4] as number);
    await writeFile(wal, buf);
    expect(await openError(dataDir)).toMatchObject({ code: 'STATE_WAL_CORRUPT' });
  });

  it('replays a WAL split over several segments', async () => {
    const { dataDir, wal, ends } = await writeCommits(10);
    await splitWal(dataDir, wal, ends, [1, 6, 9]);
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(store.index).toBe(10);
    expect(store.list('kv', '').length).toBe(10);
    await store.close();
  });

  it('refuses a torn record at the end of a segment that is not the last', async () => {
    const { dataDir, wal, ends } = await writeCommits(10);
    await splitWal(dataDir, wal, ends, [1, 6]);
    const first = segmentPath(join(dataDir, 'state'), 1);
    await truncate(first, (await stat(first)).size - 3);
    expect(await openError(dataDir)).toMatchObject({ code: 'STATE_WAL_CORRUPT' });
  });

  it('refuses a missing segment', async () => {
    const { dataDir, wal, ends } = await writeCommits(10);
    await splitWal(dataDir, wal, ends, [1, 6, 9]);
    await unlink(segmentPath(join(dataDir, 'state'), 6));
    expect(await openError(dataDir)).toMatchObject({ code: 'STATE_WAL_GAP' });
  });

  it('refuses a corrupt or cut snapshot', async () => {
    const dataDir = await dirs.make();
    const store = await openEmbeddedStore({ dataDir, log: silentLogger });
    for (let i = 0; i < 20; i++) await store.commit([{ op: 'set', table: 'kv', key: `k${i}`, value: i }]);
    await store.compact();
    await store.close();
    const snapshot = join(dataDir, 'state', 'snapshot.bin');
    const good = await readFile(snapshot);

    const flipped = Buffer.from(good);
    flip(flipped, Math.floor(good.length / 2), 0x20);
    await writeFile(snapshot, flipped);
    expect(await openError(dataDir)).toMatchObject({ code: 'STATE_SNAPSHOT_CORRUPT', kind: 'internal' });

    await writeFile(snapshot, good.subarray(0, good.length - 20));
    expect(await openError(dataDir)).toMatchObject({ code: 'STATE_SNAPSHOT_CORRUPT' });

    await writeFile(snapshot, good);
    const reopened = await openEmbeddedStore({ dataDir, log: silentLogger });
    expect(reopened.list('kv', '').length).toBe(20);
    await reopened.close();
    expect((await readdir(join(dataDir, 'state'))).filter((f) => f.startsWith('LOCK'))).toEqual([]);
  });
});
