// An error in an operator's words, on one line: a failed file-system call as "no such file" or
// "permission denied" rather than Node's `ENOENT: no such file or directory, open '…'`, and an
// error with causes followed by the reasons its own message does not already give
// ("cannot lock state directory /var/lib/svc: permission denied").

const REASONS: Readonly<Record<string, string>> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'is a directory',
  ENOTDIR: 'not a directory',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on device',
};

export function describeFsError(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && Object.hasOwn(REASONS, code)) return REASONS[code] as string;
  return err instanceof Error ? err.message : String(err);
}

/** The message, then each cause's reason that it does not already hold. */
export function errorText(err: Error): string {
  let text = err.message;
  for (let cause = err.cause, depth = 0; cause instanceof Error && depth < 5; cause = cause.cause, depth++) {
    const reason = describeFsError(cause);
    if (!text.includes(reason) && !text.includes(cause.message)) text += `: ${reason}`;
  }
  return text;
}
