// docs/errors.md is generated from the error catalogue; this test fails when they differ.
// Regenerate it with: npx vitest run test/unit/core/errors-doc.test.ts -u
import { describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, type ErrorCode, type ErrorSpec } from '../../../src/core/error-catalogue.js';
import { STATUS_BY_KIND, STATUS_LINE } from '../../../src/http/reply.js';

const REGENERATE = 'npx vitest run test/unit/core/errors-doc.test.ts -u';

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, '\\n');
}

function errorsDoc(): string {
  const rows = (Object.entries(ERROR_CATALOGUE) as [ErrorCode, ErrorSpec][]).map(([code, spec]) => {
    const status = STATUS_LINE[STATUS_BY_KIND[spec.kind]] ?? String(STATUS_BY_KIND[spec.kind]);
    return `| \`${code}\` | ${status} | \`${cell(spec.message)}\` | ${cell(spec.note ?? '')} |`;
  });
  return [
    '# Errors',
    '',
    '<!-- Generated from src/core/error-catalogue.ts; do not edit. Regenerate: ' + REGENERATE + ' -->',
    '',
    'Every error the agent raises has a stable code, declared once in `src/core/error-catalogue.ts`',
    'with its kind (which sets the HTTP status) and its message. An HTTP client receives the status and',
    'the message as plain text; the code is on the `AgentError` an embedder catches, and in the log of',
    'every 5xx. Where Consul answers the same request with a text clients match on ("ACL not found",',
    '"Permission denied: …"), the message is that text, byte for byte.',
    '',
    'In a message, `{name}` stands for a value of the request or the state, and `{name:q}` for the same',
    'value in double quotes with JSON escapes (Go\'s `%q`). `\\n` is a newline. An error noted "At start-up"',
    'stops the agent (exit status 1, the message on stderr) instead of answering a request.',
    '',
    '| Code | Status | Message | Notes |',
    '| --- | --- | --- | --- |',
    ...rows,
    '',
  ].join('\n');
}

describe('docs/errors.md', () => {
  it(`lists the catalogue as it is (regenerate: ${REGENERATE})`, async () => {
    await expect(
      errorsDoc(),
      `docs/errors.md differs from the error catalogue; regenerate it: ${REGENERATE}`,
    ).toMatchFileSnapshot('../../../docs/errors.md');
  });
});
