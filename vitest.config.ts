import { defineConfig } from 'vitest/config';

// Two cores here: at most two test files at once; integration tests start real agents.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
