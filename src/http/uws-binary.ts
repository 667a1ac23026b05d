// Whether uWebSockets.js has a native binary for this Node, found without loading the package:
// loading it on a Node it was not built for prints a warning and returns a slow JavaScript
// fallback, which the agent never uses (it serves with node:http then; docs/decisions.md D18).
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export function uwsBinaryPath(): string | undefined {
  try {
    const main = createRequire(import.meta.url).resolve('@trufflesuite/uws-js-unofficial');
    return join(dirname(main), '..', 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
  } catch {
    return undefined;
  }
}

/** False when the binary is missing, or when UWS_USE_FALLBACK asks the package for its fallback. */
export function uwsNativeAvailable(): boolean {
  if (/^(1|true)$/i.test(process.env.UWS_USE_FALLBACK ?? '')) return false;
  const path = uwsBinaryPath();
  return path !== undefined && existsSync(path);
}
