// The start-up report of the open-files limit: parsed from /proc/<pid>/limits, info when it is
// comfortable, a warning with the systemd advice when it is low or was not raised to the hard limit.
import { describe, expect, it } from 'vitest';
import {
  LOW_OPEN_FILES,
  openFilesReport,
  parseOpenFilesLimit,
  processDescriptors,
  readOpenFilesLimit,
} from '../../../src/core/open-files.js';
import { giveBack, hasPrlimit, setOwnOpenFilesLimit, takeEveryDescriptor } from '../../support/open-files.js';

const limits = (soft: string, hard: string) =>
  [
    'Limit                     Soft Limit           Hard Limit           Units     ',
    'Max processes             63448                63448                processes ',
    `Max open files            ${soft.padEnd(20)} ${hard.padEnd(20)} files     `,
    'Max locked memory         8388608              8388608              bytes     ',
  ].join('\n');

describe('parseOpenFilesLimit', () => {
  it('reads the soft and hard values of the "Max open files" row', () => {
    expect(parseOpenFilesLimit(limits('1024', '524288'))).toEqual({ soft: 1024, hard: 524288 });
    expect(parseOpenFilesLimit(limits('unlimited', 'unlimited'))).toEqual({ soft: Infinity, hard: Infinity });
  });

  it('is undefined without the row or with values it cannot read', () => {
    expect(parseOpenFilesLimit('Limit Soft Limit Hard Limit Units\n')).toBeUndefined();
    expect(parseOpenFilesLimit(limits('lots', '1024'))).toBeUndefined();
  });

  it('is undefined where the file cannot be read', () => {
    expect(
      readOpenFilesLimit(() => {
        throw Object.assign(new Error('no /proc here'), { code: 'ENOENT' });
      }),
    ).toBeUndefined();
  });
});

describe('openFilesReport', () => {
  it('logs a comfortable limit at info', () => {
    expect(openFilesReport({ soft: 65536, hard: 65536 })).toEqual({
      level: 'info',
      obj: { openFiles: 65536, openFilesHard: 65536 },
      msg: 'open-files limit',
    });
  });

  it('warns, with the systemd advice, when the soft limit is still below the hard one', () => {
    const report = openFilesReport({ soft: 1024, hard: 4096 });
    expect(report.level).toBe('warn');
    expect(report.msg).toMatch(
      /^open-files limit 1024 could not be raised to the hard limit 4096; .*LimitNOFILE=65536/,
    );
  });

  it(`warns, with the systemd advice, when the limit is below ${LOW_OPEN_FILES} and cannot go higher`, () => {
    const report = openFilesReport({ soft: 1024, hard: 1024 });
    expect(report).toMatchObject({ level: 'warn', obj: { openFiles: 1024, openFilesHard: 1024 } });
    expect(report.msg).toMatch(/^open-files limit 1024 is low: .*LimitNOFILE=65536/);
    expect(openFilesReport({ soft: LOW_OPEN_FILES, hard: LOW_OPEN_FILES }).level).toBe('info');
  });

  it('says so at debug where the platform does not show the limit', () => {
    expect(openFilesReport(undefined)).toEqual({
      level: 'debug',
      obj: {},
      msg: 'open-files limit not readable on this platform',
    });
  });
});

describe.runIf(hasPrlimit)('processDescriptors', () => {
  it("counts this process's free descriptors, and says when none is left", () => {
    const limit = readOpenFilesLimit()!;
    const before = processDescriptors.free()!;
    expect(before.limit).toBe(limit.soft);
    expect(before.free).toBeGreaterThan(0);
    expect(processDescriptors.exhausted()).toBe(false);
    const lowered = limit.soft - before.free + 16;
    setOwnOpenFilesLimit(lowered, limit.hard);
    let held: number[] = [];
    try {
      expect(processDescriptors.free()).toMatchObject({ limit: lowered });
      held = takeEveryDescriptor();
      expect(processDescriptors.exhausted()).toBe(true);
      // The limit itself cannot be read now: the one read last is kept.
      expect(processDescriptors.free()).toEqual({ free: 0, limit: lowered });
    } finally {
      giveBack(held);
      setOwnOpenFilesLimit(limit.soft, limit.hard);
    }
  });
});
