import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RotatingLogFile } from '../../../src/core/log-file.js';

describe('RotatingLogFile', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));
  const dir = (): string => {
    const d = mkdtempSync(join(tmpdir(), 'svc-logfile-'));
    dirs.push(d);
    return d;
  };

  it('appends, and rotates before a line would pass the size limit', () => {
    const d = dir();
    let now = 1000;
    const file = new RotatingLogFile({
      path: join(d, 'agent.log'),
      maxBytes: 10,
      maxAgeMs: 0,
      maxFiles: 0,
      now: () => now,
    });
    file.write('aaaa\n');
    file.write('bbbb\n');
    now = 2000;
    file.write('cccc\n');
    file.close();
    expect(readFileSync(join(d, 'agent.log'), 'utf8')).toBe('cccc\n');
    expect(readFileSync(join(d, 'agent-2000.log'), 'utf8')).toBe('aaaa\nbbbb\n');
  });

  it('rotates by age and keeps only the newest rotated files', () => {
    const d = dir();
    let now = 0;
    const file = new RotatingLogFile({
      path: join(d, 'agent.log'),
      maxBytes: 0,
      maxAgeMs: 100,
      maxFiles: 2,
      now: () => now,
    });
    for (let i = 1; i <= 4; i++) {
      file.write(`line ${i}\n`);
      now += 100;
    }
    file.write('last\n');
    file.close();
    expect(readdirSync(d).sort()).toEqual(['agent-300.log', 'agent-400.log', 'agent.log']);
    expect(readFileSync(join(d, 'agent-400.log'), 'utf8')).toBe('line 4\n');
  });

  it('keeps no rotated file with -1', () => {
    const d = dir();
    let now = 0;
    const file = new RotatingLogFile({
      path: join(d, 'a.log'),
      maxBytes: 5,
      maxAgeMs: 0,
      maxFiles: -1,
      now: () => now++,
    });
    file.write('12345\n');
    file.write('67890\n');
    file.close();
    expect(readdirSync(d)).toEqual(['a.log']);
  });

  it('keeps the live file open when a rotation fails, and rotates at a later line', () => {
    const d = dir();
    let now = 1000;
    mkdirSync(join(d, 'agent-2000.log')); // the rotated name is taken by a directory
    const file = new RotatingLogFile({
      path: join(d, 'agent.log'),
      maxBytes: 10,
      maxAgeMs: 0,
      maxFiles: 0,
      now: () => now,
    });
    file.write('aaaa\n');
    file.write('bbbb\n');
    now = 2000;
    expect(() => file.write('cccc\n')).toThrow();
    now = 3000;
    file.write('dddd\n');
    file.close();
    expect(readFileSync(join(d, 'agent-3000.log'), 'utf8')).toBe('aaaa\nbbbb\n');
    expect(readFileSync(join(d, 'agent.log'), 'utf8')).toBe('dddd\n');
  });
});
