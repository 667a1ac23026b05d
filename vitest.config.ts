import { defineConfig } from 'vitest/config';

// Two cores here: at most two test files at once; integration tests start real agents. The
// integration suite runs once, on the default transport (auto: uWebSockets.js on loopback, where
// the tests' agents listen); node:http is held by the transport contract suite
// (test/contract/transport.contract.ts) and by the integration files about a request's bytes
// (framing, malformed and pipelined requests), which run on both (docs/decisions.md D18).
// `npm run test:quick` runs the unit and contract tests alone.
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    include: ['test/**/*.test.ts'],
  },
});
