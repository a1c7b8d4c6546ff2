import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Files that need a server of their own, so each runs in a fresh worker process: module mocks
 * (atomic-writes); a setting a fresh server reads from the environment, and two default servers
 * (memory-sql-agreement); two default servers (terminology/cache); operations registered before
 * the server starts, whose CapabilityStatement and GraphQL schema a server builds once
 * (operations/framework); spending the loopback address's budget of failed logins (throttle);
 * hostile requests, which must not take down (or leave broken) a server other files share (fuzz).
 */
const OWN_SERVER = [
  'test/admin/atomic-writes.test.ts',
  'test/auth/throttle.test.ts',
  'test/fuzz/hostile.test.ts',
  'test/operations/framework.test.ts',
  'test/terminology/cache.test.ts',
  'test/terminology/memory-sql-agreement.test.ts',
];

export default defineConfig({
  resolve: {
    // One graphql instance, as in production: vite would load graphql's ESM build for our sources while
    // the dependencies (graphql-yoga, graphql-tools) load its CommonJS build through Node, and
    // graphql-js refuses schema objects of "another realm".
    alias: [{ find: /^graphql$/, replacement: 'graphql/index.js' }],
  },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Migrates one embedded database per run; every test server on PGlite starts from a copy of it.
    globalSetup: ['test/helpers/global-setup.ts'],
    // Two cores: 3 or 4 workers measured no faster, on PostgreSQL too.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: { name: 'own-server', include: OWN_SERVER, isolate: true },
      },
      {
        // A worker process runs its files one after another with the modules loaded once, and
        // useTestServer() without overrides gives them the worker's one default server
        // (test/helpers/server.ts): no module loading and no server start per file.
        extends: true,
        test: {
          name: 'shared-server',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...OWN_SERVER],
          isolate: false,
          provide: { sharedTestServer: true },
        },
      },
    ],
  },
});
