// The one error type of the agent. Domain code throws AgentError with a stable `code` and a
// `kind`; only the HTTP layer maps a kind to a status. Messages are Consul's texts where clients
// match on them, so they are part of the contract.

export type ErrorKind =
  | 'invalid' // 400: the request is malformed or breaks a rule
  | 'unauthorized' // 401: ACL support disabled
  | 'permission-denied' // 403: token lacks a permission, or token unknown
  | 'not-found' // 404
  | 'conflict' // 409
  | 'too-large' // 413
  | 'rate-limited' // 429
  | 'unavailable' // 503: a backend cannot answer right now
  | 'internal'; // 500: a real fault of ours

export class AgentError extends Error {
  override readonly name = 'AgentError';
  constructor(
    readonly code: string,
    readonly kind: ErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export const invalid = (code: string, message: string): AgentError => new AgentError(code, 'invalid', message);

export const notFound = (code: string, message = ''): AgentError => new AgentError(code, 'not-found', message);

export const isAgentError = (err: unknown): err is AgentError => err instanceof AgentError;
