// The error every config failure becomes: one AgentError (code CONFIG_INVALID, kind invalid) that
// carries all problems found, so an operator fixes a file in one pass instead of one per restart.
import { AgentError } from '../core/errors.js';

export const CONFIG_INVALID = 'CONFIG_INVALID';

export class ConfigError extends AgentError {
  /** One line per problem, each naming the file or the dotted key it is about. */
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(CONFIG_INVALID, 'invalid', problems.join('\n'));
    this.problems = Object.freeze([...problems]);
  }
}

export const isConfigError = (err: unknown): err is ConfigError => err instanceof ConfigError;
