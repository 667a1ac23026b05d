// The etcd store's view on disk: written when the view's revision moved (once per interval, on a
// fake clock), read back with its revision and write time, and left alone when nothing moved.
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../../../src/core/clock.js';
import { silentLogger } from '../../../../src/core/log.js';
import { ETCD_VIEW_DIR, EtcdViewFile } from '../../../../src/state/etcd/etcd-view-file.js';
import { MemoryTables } from '../../../../src/state/memory-tables.js';
import { SNAPSHOT_FILE } from '../../../../src/state/state-files.js';

let dataDir: string;
let tables: MemoryTables;
let revision: number;
const clock = new FakeClock(1_000_000);
const source = { revision: () => revision, capture: () => ({ index: revision, tables: tables.capture().tables }) };

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'svc-view-file-'));
  tables = new MemoryTables();
  revision = 0;
});
afterEach(() => rm(dataDir, { recursive: true, force: true }));

function commit(rev: number, key: string, value: unknown): void {
  tables.apply(rev, [{ op: 'set', table: 'kv', key, value }], clock.now());
  revision = rev;
}

describe('EtcdViewFile', () => {
  it('has nothing to load before the first write', async () => {
    const file = await EtcdViewFile.open(dataDir, source, clock, silentLogger, 100);
    expect(await file.load()).toBeUndefined();
  });

  it('writes the view once its revision moved, and loads it back with that revision and its write time', async () => {
    const file = await EtcdViewFile.open(dataDir, source, clock, silentLogger, 100);
    file.startSaving();
    commit(7, 'a', { v: 1 });
    clock.advance(100);
    await file.save(); // waits for the write the timer started (real files)
    await file.close();

    const again = await EtcdViewFile.open(dataDir, source, clock, silentLogger, 100);
    const stored = await again.load();
    expect(stored?.image.index).toBe(7);
    expect(stored?.image.tables.find((t) => t.name === 'kv')?.rows).toEqual([
      { key: 'a', value: { v: 1 }, createIndex: 7, modifyIndex: 7 },
    ]);
    expect(stored?.savedAt).toBe(Math.floor((await stat(join(dataDir, ETCD_VIEW_DIR, SNAPSHOT_FILE))).mtimeMs));
  });

  it('records when the view was last current, even with the revision standing still, and loads it', async () => {
    // Ahead of the file system's clock, so the recorded time and not the file's mtime answers.
    const ahead = new FakeClock(Date.now() + 3_600_000);
    let connected = true;
    const lastContact = ahead.now() + 1_000;
    const current = { ...source, currentAt: () => (connected ? ahead.now() : lastContact) };
    const file = await EtcdViewFile.open(dataDir, current, ahead, silentLogger, 100);
    commit(3, 'a', 1);
    await file.save();
    ahead.advance(1_000);
    await file.save(); // the same revision, etcd still answering
    connected = false;
    ahead.advance(60_000);
    await file.close();

    const stored = await (await EtcdViewFile.open(dataDir, source, clock, silentLogger, 100)).load();
    expect(stored?.image.index).toBe(3);
    expect(stored?.savedAt).toBe(lastContact);
  });

  it('does not rewrite the file while the revision stays put, and writes the last change on close', async () => {
    const file = await EtcdViewFile.open(dataDir, source, clock, silentLogger, 100);
    commit(3, 'a', 1);
    await file.save();
    const path = join(dataDir, ETCD_VIEW_DIR, SNAPSHOT_FILE);
    const first = (await stat(path)).ino;
    await file.save();
    // The write goes to a temp file renamed over the old one: an unchanged inode means no rewrite.
    expect((await stat(path)).ino).toBe(first);
    commit(4, 'b', 2);
    await file.close();
    expect((await stat(path)).ino).not.toBe(first);
    const stored = await (await EtcdViewFile.open(dataDir, source, clock, silentLogger, 100)).load();
    expect(stored?.image.index).toBe(4);
  });
});
