// A full disk makes the store read-only, not dead: reads go on, each refusal is quiet (one line
// for the outage), writes resume by themselves once space is freed, with no gap in the index; a
// store opened on a full disk starts read-only.
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openEmbeddedStore } from '../../../../src/state/embedded/embedded-store.js';
import type { EmbeddedStore } from '../../../../src/state/embedded/embedded-store.js';
import { cannotMount, mountSmallFilesystem, type SmallFilesystem } from '../../../support/small-filesystem.js';
import { recordingLogger, type RecordingLogger } from '../support.js';

const mounted: SmallFilesystem[] = [];
afterEach(async () => {
  await Promise.all(mounted.splice(0).map((fs) => fs.unmount()));
});

async function smallFs(): Promise<SmallFilesystem> {
  const fs = await mountSmallFilesystem(4);
  mounted.push(fs);
  return fs;
}

const set = (key: string, value: unknown) => [{ op: 'set' as const, table: 'kv', key, value }];

/** Commits until one succeeds; the disk retry runs every 10 ms, so this waits for that event. */
async function commitWhenWritable(store: EmbeddedStore, key: string): Promise<number> {
  for (;;) {
    try {
      return (await store.commit(set(key, 'resumed'))).index;
    } catch (err) {
      expect(err).toMatchObject({ code: 'STATE_DISK_FULL' });
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

function linesAbout(log: RecordingLogger, text: string): number {
  return log.entries.filter((e) => e.msg?.includes(text)).length;
}

describe.skipIf(cannotMount() !== undefined)('a full disk', () => {
  it('refuses writes with 503 and one log line, serves reads, and resumes by itself once space is freed', async () => {
    const fs = await smallFs();
    const log = recordingLogger();
    const store = await openEmbeddedStore({ dataDir: join(fs.dir, 'data'), log, diskRetryMs: 10 });
    for (let i = 1; i <= 20; i++) await store.commit(set(`k${i}`, 'x'.repeat(100)));

    await fs.fill();
    const big = 'y'.repeat(64 * 1024);
    await expect(store.commit(set('too-much', big))).rejects.toMatchObject({
      code: 'STATE_DISK_FULL',
      kind: 'unavailable',
    });
    for (let i = 0; i < 5; i++)
      await expect(store.commit(set(`refused-${i}`, 1))).rejects.toMatchObject({ code: 'STATE_DISK_FULL' });
    expect(store.get('kv', 'k20')?.value).toBe('x'.repeat(100));
    expect(store.index).toBe(20);
    expect(linesAbout(log, 'disk full')).toBe(1);
    expect(log.entries.filter((e) => e.level === 'error')).toEqual([]);

    await fs.free();
    // No gap: the indexes the refused commits took are handed out again.
    expect(await commitWhenWritable(store, 'after')).toBe(21);
    const resumed = log.entries.find((e) => e.msg?.includes('writes resumed'));
    expect(resumed?.obj).toMatchObject({ refusedWrites: expect.any(Number) });
    expect((resumed?.obj as { refusedWrites: number }).refusedWrites).toBeGreaterThanOrEqual(5);
    await store.commit(set('big-now', big));
    await store.close();

    const reopened = await openEmbeddedStore({ dataDir: join(fs.dir, 'data'), log: recordingLogger() });
    expect(reopened.index).toBe(22);
    expect(reopened.get('kv', 'after')?.value).toBe('resumed');
    expect(reopened.get('kv', 'too-much')).toBeUndefined();
    await reopened.close();
  });

  it('opens read-only on a disk that is already full, and becomes writable once space is freed', async () => {
    const fs = await smallFs();
    const dataDir = join(fs.dir, 'data');
    const first = await openEmbeddedStore({ dataDir, log: recordingLogger() });
    for (let i = 1; i <= 10; i++) await first.commit(set(`k${i}`, i));
    await first.close();

    await fs.fill();
    const log = recordingLogger();
    const store = await openEmbeddedStore({ dataDir, log, diskRetryMs: 10 });
    expect(store.get('kv', 'k10')?.value).toBe(10);
    expect(linesAbout(log, 'disk full')).toBe(1);
    await expect(store.commit(set('refused', 1))).rejects.toMatchObject({ code: 'STATE_DISK_FULL' });

    await fs.free();
    expect(await commitWhenWritable(store, 'after')).toBe(11);
    await store.close();
  });
});
