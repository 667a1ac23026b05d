// docs/config.md is generated from the keys' declarations (src/config/schema.ts, block-keys.ts);
// this test fails when they differ. Regenerate it with: npx vitest run test/unit/config/config-doc.test.ts -u
import { describe, expect, it } from 'vitest';
import { BLOCK_KEYS } from '../../../src/config/block-keys.js';
import { CONSUL_KEYS, type ConsulKeyTree } from '../../../src/config/consul-keys.js';
import { KEY_RELOADS } from '../../../src/config/reload.js';
import { describeDefault, listConfigKeys } from '../../../src/config/schema.js';

const REGENERATE = 'npx vitest run test/unit/config/config-doc.test.ts -u';

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** Whether a Consul agent's file has the key (inside a group Consul leaves free, any key). */
function consulHas(path: string): boolean {
  let node: ConsulKeyTree[string] = CONSUL_KEYS;
  for (const part of path.split('.')) {
    if (typeof node !== 'object') return node === 'free';
    if (!Object.hasOwn(node, part)) return false;
    node = node[part] as ConsulKeyTree[string];
  }
  return true;
}

function reloadCell(path: string): string {
  const rule = KEY_RELOADS.get(path);
  if (rule === undefined) return '';
  const what = rule.key === path ? rule.reload : `${rule.reload}, as \`${rule.key}\``;
  return cell(rule.why === undefined ? what : `${what}: ${rule.why}`);
}

function configDoc(): string {
  const rows = [
    ...listConfigKeys().map(({ path, key }) => ({
      path,
      doc: key.doc,
      def: key.defaultDoc ?? (key.defaultValue === undefined ? undefined : `\`${describeDefault(key)}\``),
    })),
    ...BLOCK_KEYS.map(({ path, doc }) => ({ path, doc, def: undefined })),
  ].map(
    ({ path, doc, def }) =>
      `| \`${path}\` | ${cell(def ?? '')} | ${reloadCell(path)} | ${consulHas(path) ? 'yes' : 'no'} | ${cell(doc)} |`,
  );
  return [
    '# Config keys',
    '',
    '<!-- Generated from src/config/schema.ts and src/config/block-keys.ts; do not edit. Regenerate: ' +
      REGENERATE +
      ' -->',
    '',
    "Every key of an agent config file (JSON or HCL, Consul's names), declared once in",
    '`src/config/schema.ts` with its validation, default and what a reload does with it. **Reload**:',
    '"applied", the running agent takes a change on SIGHUP or `PUT /v1/agent/reload` and logs it under',
    '`applied`; "restart", the agent keeps what it started with, and the reload names the key in its',
    "`these changes take effect after a restart` warning. **Consul** says whether a Consul agent's",
    "file has the key; Consul's keys not listed here are ignored with a warning.",
    '',
    '| Key | Default | Reload | Consul | Description |',
    '| --- | --- | --- | --- | --- |',
    ...rows,
    '',
  ].join('\n');
}

describe('docs/config.md', () => {
  it(`lists the keys as declared (regenerate: ${REGENERATE})`, async () => {
    await expect(
      configDoc(),
      `docs/config.md differs from the key declarations; regenerate it: ${REGENERATE}`,
    ).toMatchFileSnapshot('../../../docs/config.md');
  });
});
