// Where things are on disk, resolved from this compiled file (dist/bench/support/) so the bench
// runs the same from any working directory.
import { fileURLToPath } from 'node:url';

/** The repository root: dist/bench/support/ is three levels below it. */
export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * The built agent CLI; the bench never builds it, `npm run bench` does. SVC_BENCH_AGENT names
 * another build's main.js instead, e.g. a checkout of main to compare a branch against.
 */
export const AGENT_MAIN =
  process.env['SVC_BENCH_AGENT'] ?? fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

/** Compiled sibling scripts that run as separate server processes. */
export const CEILING_SERVER = fileURLToPath(new URL('./ceiling-server.js', import.meta.url));
export const NODE_HTTP_SERVER = fileURLToPath(new URL('./node-http-server.js', import.meta.url));

/** Results land here (git-ignored), one JSON file per bench. */
export const BENCH_OUT = fileURLToPath(new URL('../../../.bench-out/', import.meta.url));
