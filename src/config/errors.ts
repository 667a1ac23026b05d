// The error every config failure becomes: one AgentError (code CONFIG_INVALID, kind invalid) that
// carries all problems found, so an operator fixes a file in one pass instead of one per restart.
// It stays an AgentError so that an embedder calling loadConfig() catches one error type.
import { AgentError, renderMessage } from '../core/errors.js';

export class ConfigError extends AgentError {
  /** One line per problem, each naming the file or the dotted key it is about. */
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super('CONFIG_INVALID', renderMessage('CONFIG_INVALID', { problems: problems.join('\n') }));
    this.problems = Object.freeze([...problems]);
  }
}

export const isConfigError = (err: unknown): err is ConfigError => err instanceof ConfigError;
