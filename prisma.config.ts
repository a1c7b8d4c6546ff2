import { PGlite } from '@electric-sql/pglite';
import { PrismaPGlite } from 'pglite-prisma-adapter';
import { defineConfig, type PrismaConfig } from 'prisma/config';

type MigrationAdapter = Awaited<ReturnType<Extract<PrismaConfig, { engine: 'js' }>['adapter']>>;

// The CLI runs offline: the JS schema engine over an in-memory PGlite adapter needs no native
// engine download for `prisma generate` or `prisma migrate diff` (DESIGN 3.1).
export default defineConfig({
  schema: 'prisma/schema.prisma',
  engine: 'js',
  experimental: { adapter: true },
  // Typed against an older @prisma/driver-adapter-utils; the same interface at run time.
  adapter: async () => new PrismaPGlite(new PGlite()) as unknown as MigrationAdapter,
});
