import { defineConfig } from 'vitest/config';

// Two cores here: at most two test files at once; integration tests start real agents.
// The integration suite runs twice: on the default transport (auto: uWebSockets.js on loopback,
// where the tests' agents listen) and on node:http, one contract over both (docs/decisions.md D18).
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      { extends: true, test: { name: 'default', include: ['test/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'node-transport',
          include: ['test/integration/**/*.test.ts'],
          env: { SVC_TEST_TRANSPORT: 'node' },
        },
      },
    ],
  },
});
