// The archive format (src/snapshot/archive.ts): what is written reads back equal, and every way an
// archive can be damaged or foreign is refused with its code before anything is used.
import { createHash } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { isAgentError } from '../../../src/core/errors.js';
import { ARCHIVE_VERSION, decodeArchive, encodeArchive, type ArchiveSource } from '../../../src/snapshot/archive.js';
import type { StoreImage } from '../../../src/state/types.js';

const SOURCE: ArchiveSource = {
  id: '7-1700000000000',
  datacenter: 'dc1',
  backend: 'embedded',
  created: new Date(1_700_000_000_000),
  agentVersion: '0.1.0',
};

const IMAGE: StoreImage = {
  index: 7,
  rows: [
    { table: 'acl-tokens', key: 'a', value: { SecretID: 's' } },
    { table: 'kv', key: 'x/1', value: { Value: 'aGk=', Flags: 0 } },
    { table: 'kv', key: 'x/2', value: { Value: null, Flags: 3 } },
  ],
  privateEntries: [{ path: 'ca/keys/r', value: { PrivateKey: 'pem' } }],
};

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return isAgentError(err) ? err.code : `not an AgentError: ${String(err)}`;
  }
  return undefined;
}

/** Re-gzips a changed plain text, with its checksum made right again when `reseal`. */
function rewrite(archive: Buffer, change: (plain: string) => string, reseal = false): Buffer {
  let plain = change(gunzipSync(archive).toString('utf8'));
  if (reseal) {
    const body = plain.slice(0, plain.lastIndexOf('{"SHA256"'));
    plain = `${body}${JSON.stringify({ SHA256: createHash('sha256').update(body).digest('hex') })}\n`;
  }
  return gzipSync(Buffer.from(plain, 'utf8'));
}

describe('snapshot archive', () => {
  const archive = encodeArchive(SOURCE, IMAGE);

  it('reads back what was written, with its metadata and per-table sizes', () => {
    const read = decodeArchive(archive);
    expect(read.image).toEqual(IMAGE);
    expect(read.meta).toEqual({
      Version: ARCHIVE_VERSION,
      ID: '7-1700000000000',
      Datacenter: 'dc1',
      Backend: 'embedded',
      Index: 7,
      Created: '2023-11-14T22:13:20.000Z',
      AgentVersion: '0.1.0',
      Tables: { 'acl-tokens': 1, kv: 2 },
      Private: 1,
    });
    expect(read.size).toBe(archive.length);
    expect([...read.tableBytes.keys()]).toEqual(['acl-tokens', 'kv']);
  });

  it('is gzip of lines: the magic line, the metadata, rows, private entries, the checksum', () => {
    const lines = gunzipSync(archive).toString('utf8').split('\n');
    expect(lines[0]).toBe('svc-agent snapshot');
    expect(JSON.parse(lines[2] as string)).toEqual(['acl-tokens', 'a', { SecretID: 's' }]);
    expect(JSON.parse(lines[5] as string)).toEqual({ Private: 'ca/keys/r', Value: { PrivateKey: 'pem' } });
    expect(lines[6]).toMatch(/^\{"SHA256":"[0-9a-f]{64}"\}$/);
    expect(lines[7]).toBe('');
  });

  it('refuses an archive cut short at every length', () => {
    const codes = new Set<string | undefined>();
    for (let n = 0; n < archive.length; n++) codes.add(codeOf(() => decodeArchive(archive.subarray(0, n))));
    expect([...codes]).toEqual(['SNAPSHOT_DECOMPRESS']);
  });

  it('refuses a flipped byte anywhere in the compressed archive', () => {
    let refused = 0;
    for (let i = 0; i < archive.length; i++) {
      const bad = Buffer.from(archive);
      bad[i] = (bad[i] as number) ^ 0x01;
      const code = codeOf(() => decodeArchive(bad));
      // A flip in gzip's header flags, name or mtime can leave the data intact: then it reads the same.
      if (code === undefined) expect(decodeArchive(bad).image).toEqual(IMAGE);
      else refused++;
      expect(code === undefined || code.startsWith('SNAPSHOT_')).toBe(true);
    }
    expect(refused).toBeGreaterThan(archive.length - 16);
  });

  it('refuses a changed row whose checksum no longer holds (hash check failed)', () => {
    const bad = rewrite(archive, (p) => p.replace('"x/2"', '"x/3"'));
    expect(codeOf(() => decodeArchive(bad))).toBe('SNAPSHOT_UNREADABLE');
    expect(() => decodeArchive(bad)).toThrow('failed to read snapshot file: hash check failed');
  });

  it('refuses counts that do not match the metadata, even with a checksum made to fit', () => {
    const bad = rewrite(archive, (p) => p.replace('"kv":2', '"kv":3'), true);
    expect(() => decodeArchive(bad)).toThrow('table kv holds 2 rows, its metadata says 3');
  });

  it('refuses what is not ours: plain text, a gzip of something else, another format version', () => {
    expect(codeOf(() => decodeArchive(Buffer.from('not gzip')))).toBe('SNAPSHOT_DECOMPRESS');
    expect(codeOf(() => decodeArchive(gzipSync(Buffer.from('state.bin\0\0\0'))))).toBe('SNAPSHOT_FOREIGN');
    const v2 = rewrite(archive, (p) => p.replace('"Version":1', '"Version":2'), true);
    expect(codeOf(() => decodeArchive(v2))).toBe('SNAPSHOT_VERSION');
    expect(() => decodeArchive(v2)).toThrow('archive format version 2 is not supported (this agent reads version 1)');
  });

  it('refuses a missing checksum line', () => {
    const bad = rewrite(archive, (p) => p.slice(0, p.lastIndexOf('{"SHA256"')));
    expect(() => decodeArchive(bad)).toThrow('failed to read snapshot file: the archive is cut short');
  });
});
