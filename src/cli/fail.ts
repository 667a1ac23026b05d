// How a command-line failure is printed: `==> message`, continuation lines indented.
import { isConfigError } from '../config/errors.js';
import { isAgentError } from '../core/errors.js';

export function fail(err: unknown): number {
  const message = isConfigError(err) || isAgentError(err) ? err.message : String(err);
  process.stderr.write(`==> ${message.split('\n').join('\n    ')}\n`);
  return 1;
}
