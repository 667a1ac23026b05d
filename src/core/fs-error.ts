// A failed file-system call in an operator's words ("no such file", "permission denied"), for the
// one-line errors about config, TLS, log and data files; an unknown code keeps Node's message.

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
