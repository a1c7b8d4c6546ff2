/**
 * `npm run migration:new -- <name>`: writes prisma/migrations/NNNN_<name>/migration.sql with the SQL
 * that takes the schema from the last committed prisma/schema.prisma to the working copy
 * (DESIGN 3.1: `prisma migrate diff` works offline with the JS engine and a PGlite adapter).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const name = process.argv[2];
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  console.error('usage: npm run migration:new -- <name_in_snake_case>');
  process.exit(2);
}

const migrationsDir = 'prisma/migrations';
const numbers = readdirSync(migrationsDir)
  .map((entry) => Number(entry.slice(0, 4)))
  .filter((n) => Number.isInteger(n));
const next = String(Math.max(0, ...numbers) + 1).padStart(4, '0');

const scratch = mkdtempSync(join(tmpdir(), 'flint-migration-'));
try {
  const previous = join(scratch, 'previous.prisma');
  writeFileSync(previous, execFileSync('git', ['show', 'HEAD:prisma/schema.prisma'], { encoding: 'utf8' }));
  const sql = execFileSync(
    'npx',
    ['prisma', 'migrate', 'diff', '--from-schema-datamodel', previous, '--to-schema-datamodel', 'prisma/schema.prisma', '--script'],
    { encoding: 'utf8', env: { ...process.env, DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://localhost/flint' } },
  );
  if (!/\b(CREATE|ALTER|DROP)\b/i.test(sql)) {
    console.error('The schema has not changed since the last commit: no migration written.');
    process.exit(1);
  }
  const dir = join(migrationsDir, `${next}_${name}`);
  mkdirSync(dir);
  writeFileSync(join(dir, 'migration.sql'), sql);
  console.log(`wrote ${dir}/migration.sql`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
