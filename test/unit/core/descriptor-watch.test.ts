// The descriptor watch: one warning when the process runs out of descriptors, one line when
// enough are free again (not at the first free one), nothing in between; the transport is told
// of each change.
import { describe, expect, it } from 'vitest';
import { DescriptorWatch, enoughFree } from '../../../src/core/descriptor-watch.js';
import type { DescriptorProbe } from '../../../src/core/open-files.js';
import { recordingLogger } from '../../support/recording-logger.js';

/** A probe the test sets: `free` descriptors under `limit`, exhausted at 0. */
function probe(limit: number | undefined) {
  const state = { free: 100 };
  const descriptors: DescriptorProbe = {
    exhausted: () => state.free === 0,
    free: () => (limit === undefined ? undefined : { free: state.free, limit }),
  };
  return { state, descriptors };
}

describe('enoughFree', () => {
  it('asks for 1/16 of the limit, and at least 32', () => {
    expect(enoughFree(63, 1024)).toBe(false);
    expect(enoughFree(64, 1024)).toBe(true);
    expect(enoughFree(31, 100)).toBe(false);
    expect(enoughFree(32, 100)).toBe(true);
  });
});

describe('DescriptorWatch', () => {
  it('warns once when descriptors run out and says once when enough are free again', () => {
    const { state, descriptors } = probe(1024);
    const log = recordingLogger();
    const changes: boolean[] = [];
    const watch = new DescriptorWatch(descriptors, log, (out) => changes.push(out));
    watch.check();
    expect(log.entries).toEqual([]);

    state.free = 0;
    watch.check();
    watch.check();
    expect(watch.exhausted).toBe(true);
    expect(log.entries).toEqual([
      {
        level: 'warn',
        obj: { openFiles: 1024 },
        msg: expect.stringMatching(/^out of file descriptors: .*existing ones are kept/),
      },
    ]);

    state.free = 10; // free again, but a flood still arriving would take these at once
    watch.check();
    expect(watch.exhausted).toBe(true);
    expect(log.entries).toHaveLength(1);

    state.free = 64;
    watch.check();
    watch.check();
    expect(watch.exhausted).toBe(false);
    expect(log.entries[1]).toEqual({
      level: 'info',
      obj: { free: 64 },
      msg: 'file descriptors available again: accepting connections',
    });
    expect(log.entries).toHaveLength(2);
    expect(changes).toEqual([true, false]);
  });

  it('takes one free descriptor as the end where the platform does not count them', () => {
    const { state, descriptors } = probe(undefined);
    const log = recordingLogger();
    const watch = new DescriptorWatch(descriptors, log);
    state.free = 0;
    watch.check();
    state.free = 1;
    watch.check();
    expect(watch.exhausted).toBe(false);
    expect(log.entries.map((e) => e.level)).toEqual(['warn', 'info']);
  });
});
