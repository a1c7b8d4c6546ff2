import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // One graphql instance, as in production: vite would load graphql's ESM build for our sources while
    // the dependencies (graphql-yoga, graphql-tools) load its CommonJS build through Node, and
    // graphql-js refuses schema objects of "another realm".
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: more workers than that only adds PGlite start-up cost.
    maxWorkers: 2,
  },
});
