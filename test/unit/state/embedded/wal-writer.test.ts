import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../../src/core/log.js';
import type { AgentError } from '../../../../src/core/errors.js';
import { encodeRecord } from '../../../../src/state/record-codec.js';
import { listSegments } from '../../../../src/state/state-files.js';
import { WalWriter } from '../../../../src/state/embedded/wal-writer.js';
import type { PendingWrite } from '../../../../src/state/embedded/wal-writer.js';
import { recordingLogger, tempDirs } from '../support.js';

const dirs = tempDirs();
afterEach(dirs.cleanupDirs);

const write = (index: number): PendingWrite => ({ index, record: encodeRecord(JSON.stringify({ i: index })) });

describe('WalWriter', () => {
  it('rotates at a batch boundary and reports the last index of the old segments', async () => {
    const dir = await dirs.make();
    const durable: number[] = [];
    const wal = await WalWriter.open({
      dir,
      segments: [],
      activeBytes: 0,
      lastIndex: 0,
      log: silentLogger,
      onDurable: (batch) => durable.push(...batch.map((w) => w.index)),
      onFailed: () => {},
    });
    wal.append(write(1));
    wal.append(write(2));
    let boundary = -1;
    const rotated = wal.rotate((last) => (boundary = last));
    // Queued before the boundary, so it joins the batch written before the rotation.
    wal.append(write(3));
    await rotated;
    wal.append(write(4));
    await wal.drain();
    expect(boundary).toBe(3);
    expect(durable).toEqual([1, 2, 3, 4]);
    expect((await listSegments(dir)).map((s) => s.firstIndex)).toEqual([1, 4]);
    await wal.removeSegmentsThrough(3);
    expect((await listSegments(dir)).map((s) => s.firstIndex)).toEqual([4]);
    await wal.close();
  });

  it('stops for good after a failed write: the batch and every later write are rejected', async () => {
    const dir = await dirs.make();
    const failed: [number, string][] = [];
    const log = recordingLogger();
    const wal = await WalWriter.open({
      dir,
      segments: [],
      activeBytes: 0,
      lastIndex: 0,
      log,
      onDurable: () => {},
      onFailed: (batch, error: AgentError) => failed.push(...batch.map((w): [number, string] => [w.index, error.code])),
    });
    // Closing the file under the writer makes the next write fail with EBADF.
    await wal.close();
    wal.append(write(1));
    await wal.drain();
    wal.append(write(2));
    await wal.drain();
    expect(failed).toEqual([
      [1, 'STATE_WAL_WRITE_FAILED'],
      [2, 'STATE_WAL_WRITE_FAILED'],
    ]);
    expect(wal.failed?.kind).toBe('unavailable');
    expect(
      log.entries.some((e) => e.level === 'error' && e.obj['segment'] === join(dir, 'wal-00000000000000000001.log')),
    ).toBe(true);
  });
});
