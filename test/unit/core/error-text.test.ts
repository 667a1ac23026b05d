import { describe, expect, it } from 'vitest';
import { describeFsError, errorText } from '../../../src/core/error-text.js';

const fsError = (code: string, message: string): Error => Object.assign(new Error(message), { code });

describe('describeFsError', () => {
  it("says a file-system failure in words, and keeps any other error's message", () => {
    expect(describeFsError(fsError('ENOENT', "ENOENT: no such file or directory, open '/a'"))).toBe('no such file');
    expect(describeFsError(fsError('EACCES', 'EACCES: permission denied'))).toBe('permission denied');
    expect(describeFsError(new Error('something else'))).toBe('something else');
    expect(describeFsError('text')).toBe('text');
  });
});

describe('errorText', () => {
  it("adds each cause's reason that the message does not already give", () => {
    const locked = new Error('cannot lock state directory /d', {
      cause: fsError('EACCES', "EACCES: permission denied, open '/d/LOCK'"),
    });
    expect(errorText(locked)).toBe('cannot lock state directory /d: permission denied');
    const said = new Error('cannot create directory /d: permission denied', {
      cause: fsError('EACCES', 'EACCES: permission denied'),
    });
    expect(errorText(said)).toBe('cannot create directory /d: permission denied');
    const chain = new Error('a', { cause: new Error('b', { cause: new Error('c') }) });
    expect(errorText(chain)).toBe('a: b: c');
    expect(errorText(new Error('plain'))).toBe('plain');
  });
});
