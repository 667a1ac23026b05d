// The start-up error for an address the agent cannot bind, in Go's words
// (`listen tcp 127.0.0.1:8500: bind: address already in use`), for every transport.
import { createServer } from 'node:net';
import { agentError, type AgentError } from '../core/errors.js';

const REASONS: Readonly<Record<string, string>> = {
  EADDRINUSE: 'address already in use',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'cannot assign requested address',
};

export function listenError(api: 'HTTP' | 'HTTPS', host: string, port: number, code: string | undefined): AgentError {
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  const reason = (code !== undefined ? REASONS[code] : undefined) ?? (code ?? 'unknown error').toLowerCase();
  return agentError('HTTP_LISTEN', { api, address, reason });
}

/**
 * uWS reports a failed listen as `false` without the errno: binding the same address with a plain
 * socket finds it (an exclusive bind, so it fails the way uWS's did while the address stays taken).
 */
export function bindErrorCode(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code));
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve(undefined)));
  });
}
