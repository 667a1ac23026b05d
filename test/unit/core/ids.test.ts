import { describe, expect, it } from 'vitest';
import { generateId, isUuid } from '../../../src/core/ids.js';

const SHAPE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('generateId', () => {
  it('is 8-4-4-4-12 lowercase hex', () => {
    for (let i = 0; i < 50; i++) {
      const id = generateId();
      expect(id).toHaveLength(36);
      expect(id).toMatch(SHAPE);
      expect(isUuid(id)).toBe(true);
    }
  });

  it('never repeats over many ids', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 10_000; i++) ids.add(generateId());
    expect(ids.size).toBe(10_000);
  });

  it('forces no RFC 4122 version nibble (as go-uuid)', () => {
    // P(all 200 have '4' at index 14) = (1/16)^200: a failure here means the nibble is forced.
    const ids = Array.from({ length: 200 }, generateId);
    expect(ids.some((id) => id[14] !== '4')).toBe(true);
    // Nor variant bits: index 19 would be limited to 8, 9, a, b.
    expect(ids.some((id) => !'89ab'.includes(id[19] as string))).toBe(true);
  });
});

describe('isUuid', () => {
  it.each([
    '00000000-0000-0000-0000-000000000002',
    'ABCDEF01-2345-6789-abcd-ef0123456789',
    'e3b0c442-98fc-1c14-9afb-f4c8996fb924', // version 1 nibble: not checked
  ])('accepts %j', (value) => {
    expect(isUuid(value)).toBe(true);
  });

  it.each([
    '',
    'e3b0c44298fc1c149afbf4c8996fb924',
    'e3b0c442-98fc-1c14-9afb-f4c8996fb92',
    'e3b0c442-98fc-1c14-9afb-f4c8996fb9245',
    'e3b0c442-98fc1-c14-9afb-f4c8996fb924',
    'g3b0c442-98fc-1c14-9afb-f4c8996fb924',
    '{e3b0c442-98fc-1c14-9afb-f4c8996fb924}',
    'e3b0c442-98fc-1c14-9afb-f4c8996fb924\n',
  ])('rejects %j', (value) => {
    expect(isUuid(value)).toBe(false);
  });
});
