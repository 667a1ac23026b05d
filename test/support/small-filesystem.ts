// A real small file system for disk-full tests: a tmpfs of a few MiB mounted on a temp directory
// (needs root, as the CI machine runs the tests), filled to the last byte and freed again.
import { execFileSync } from 'node:child_process';
import { mkdtemp, open, rm, rmdir, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SmallFilesystem {
  readonly dir: string;
  /** Writes a filler file until the file system refuses with ENOSPC. */
  fill(): Promise<void>;
  /** Deletes the filler. */
  free(): Promise<void>;
  unmount(): Promise<void>;
}

/** Why small file systems cannot be mounted here, or undefined when they can. */
export function cannotMount(): string | undefined {
  if (process.getuid?.() !== 0) return 'mounting a tmpfs needs root';
  return undefined;
}

export async function mountSmallFilesystem(sizeMiB: number): Promise<SmallFilesystem> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-agent-smallfs-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', dir]);
  const filler = join(dir, 'filler');
  return {
    dir,
    fill: async () => {
      const handle = await open(filler, 'a');
      const chunk = Buffer.alloc(64 * 1024, 1);
      try {
        // Halving the write on each refusal fills the last partial page too.
        let size = chunk.length;
        for (;;) {
          try {
            await handle.write(chunk, 0, size);
          } catch (err) {
            if ((err as { code?: unknown }).code !== 'ENOSPC') throw err;
            if (size === 1) return;
            size >>= 1;
          }
        }
      } finally {
        await handle.close();
      }
    },
    free: () => unlink(filler),
    unmount: async () => {
      execFileSync('umount', ['-l', dir]);
      await rmdir(dir).catch(() => rm(dir, { recursive: true, force: true }));
    },
  };
}
