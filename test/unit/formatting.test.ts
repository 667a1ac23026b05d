// The formatter check in `npm test` (package.json format:check, options in .prettierrc.json): a line of
// src/ past 120 columns fails it, and so does a double-quoted string.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { check, getFileInfo, resolveConfig } from 'prettier';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SOURCE = `${ROOT}src/agent/index.ts`;

async function passes(text: string): Promise<boolean> {
  const options = await resolveConfig(SOURCE, { editorconfig: false });
  return check(text, { ...options, filepath: SOURCE });
}

/** One statement that prettier keeps on one line when it fits: exactly `columns` wide. */
function lineOf(columns: number): string {
  const start = "export const words = ['";
  const end = "', 'b'];";
  return `${start}${'a'.repeat(columns - start.length - end.length)}${end}\n`;
}

describe('format:check', () => {
  it('passes a line of 120 columns in src/ and fails one of 121', async () => {
    expect(lineOf(120).length).toBe(121);
    expect(await passes(lineOf(120))).toBe(true);
    expect(await passes(lineOf(121))).toBe(false);
  });

  it('fails a double-quoted string', async () => {
    expect(await passes("export const word = 'a';\n")).toBe(true);
    expect(await passes('export const word = "a";\n')).toBe(false);
  });

  it('covers src/ and runs in npm test', async () => {
    const info = await getFileInfo(SOURCE, { ignorePath: `${ROOT}.prettierignore` });
    expect(info).toEqual({ ignored: false, inferredParser: 'typescript' });
    const { scripts } = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { scripts: Record<string, string> };
    expect(scripts['format:check']).toBe('prettier --check .');
    expect(scripts['test']).toContain('npm run format:check');
  });
});
