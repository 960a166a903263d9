import { defineConfig } from 'vitest/config';

// dawn.node segfaults under worker threads: keep the default process-per-file `forks` pool.
export default defineConfig({
  test: {
    pool: 'forks',
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // A private TMPDIR for the run; fails it if a test leaves files there or in the working tree.
    globalSetup: ['test/stray-writes.ts'],
    // fast-check's seed for every property that names none: the same cases on every run.
    setupFiles: ['test/setup-fast-check.ts'],
  },
});
