import { describe, expect, it } from 'vitest';
import { Uint64 } from '../../../src/core/go-json.js';
import { encodeJson } from '../../../src/http/json.js';
import { KV_TABLE, listKeys, storedKv, toEntryJson, type StoredKv } from '../../../src/kv/entries.js';
import type { Row } from '../../../src/state/types.js';

const rows = (...keys: string[]): Row<unknown>[] =>
  keys.map((key, i) => ({ key, value: null, createIndex: i + 1, modifyIndex: i + 1 }));

describe('listKeys', () => {
  const all = rows('a', 'a/b', 'a/b/c', 'a/d', 'a0', 'b/x/y', 'b/z', 'c');

  it('without a separator lists every key', () => {
    expect(listKeys(all, '', '')).toEqual(['a', 'a/b', 'a/b/c', 'a/d', 'a0', 'b/x/y', 'b/z', 'c']);
  });

  it('rolls keys up to the first separator, deduplicated', () => {
    expect(listKeys(all, '', '/')).toEqual(['a', 'a/', 'a0', 'b/', 'c']);
  });

  it('looks for the separator only after the prefix', () => {
    const under = rows('a/b', 'a/b/c', 'a/d', 'a/e/f', 'a/e/g');
    expect(listKeys(under, 'a/', '/')).toEqual(['a/b', 'a/b/', 'a/d', 'a/e/']);
  });

  it('a prefix that is not a folder boundary', () => {
    expect(listKeys(rows('ap/x', 'app/1/a', 'app/2', 'apple'), 'ap', '/')).toEqual(['ap/', 'app/', 'apple']);
  });

  it('a key equal to the folder itself merges with the folder', () => {
    expect(listKeys(rows('dir/', 'dir/a', 'dir/b'), '', '/')).toEqual(['dir/']);
  });

  it('multi-character separators', () => {
    expect(listKeys(rows('a--b--c', 'a--d', 'a-e'), '', '--')).toEqual(['a--', 'a-e']);
  });

  it('nothing in, nothing out', () => {
    expect(listKeys([], 'x/', '/')).toEqual([]);
    expect(listKeys([], '', '')).toEqual([]);
  });
});

describe('storedKv', () => {
  it('keeps the value as base64', () => {
    expect(storedKv(0n, Buffer.from('hello'))).toEqual({ Flags: 0, Value: 'aGVsbG8=' });
    expect(storedKv(0n, Buffer.from([0, 255, 1]))).toEqual({ Flags: 0, Value: 'AP8B' });
  });

  it('an empty body is a null Value', () => {
    expect(storedKv(3n, Buffer.alloc(0))).toEqual({ Flags: 3, Value: null });
  });

  it('flags up to 2^53-1 are numbers; beyond, decimal digits', () => {
    expect(storedKv(9007199254740991n, Buffer.alloc(0)).Flags).toBe(9007199254740991);
    expect(storedKv(9007199254740992n, Buffer.alloc(0)).Flags).toBe('9007199254740992');
    expect(storedKv(18446744073709551615n, Buffer.alloc(0)).Flags).toBe('18446744073709551615');
  });
});

describe('toEntryJson', () => {
  const row = (value: StoredKv): Row<StoredKv> => ({ key: 'a/b', value, createIndex: 4, modifyIndex: 9 });

  it('has Consul key order: LockIndex, Key, Flags, Value, CreateIndex, ModifyIndex', () => {
    const entry = toEntryJson(row({ Flags: 5, Value: 'dg==' }));
    expect(Object.keys(entry)).toEqual(['LockIndex', 'Key', 'Flags', 'Value', 'CreateIndex', 'ModifyIndex']);
    expect(entry).toEqual({ LockIndex: 0, Key: 'a/b', Flags: 5, Value: 'dg==', CreateIndex: 4, ModifyIndex: 9 });
    expect(encodeJson([entry], false)).toBe(
      '[{"LockIndex":0,"Key":"a/b","Flags":5,"Value":"dg==","CreateIndex":4,"ModifyIndex":9}]',
    );
  });

  it('writes large flags exactly and a null value as null', () => {
    const entry = toEntryJson(row(storedKv(18446744073709551615n, Buffer.alloc(0))));
    expect(entry.Flags).toBeInstanceOf(Uint64);
    expect(encodeJson(entry, false)).toBe(
      '{"LockIndex":0,"Key":"a/b","Flags":18446744073709551615,"Value":null,"CreateIndex":4,"ModifyIndex":9}',
    );
  });

  it('the table name', () => {
    expect(KV_TABLE).toBe('kv');
  });
});
