/**
 * `node scripts/build-dist.mjs` (run by `npm start` before it starts the server, and by the
 * container build): src/ as plain JavaScript in dist/, one file per source file in the same
 * folders, so every path a module finds from its own URL (schema/, prisma/migrations/, operation
 * definitions, the PGlite worker, the bot sandbox sources) stays where it was. The server then runs
 * without tsx, whose loader hooks and `__name` wrapping of every named function cost CPU on each
 * request (docs/benchmarks.md). Plain JavaScript on purpose: it runs on a fresh install with Node
 * alone, before anything is compiled.
 */
import { cpSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');
/** Prisma's generated client imports its own modules without file extensions: bundled into one file. */
const PRISMA_CLIENT = join(SRC, 'generated', 'prisma');
/** TypeScript the server compiles itself at run time with esbuild (src/bots/sandbox/bundle.ts). */
const KEPT_AS_SOURCE = join(SRC, 'bots', 'sandbox');

function filesUnder(folder) {
  return readdirSync(folder, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name));
}

const files = filesUnder(SRC);
const isTypeScript = (file) => file.endsWith('.ts') && !file.endsWith('.d.ts');
const inPrismaClient = (file) => file.startsWith(PRISMA_CLIENT + '/');

rmSync(DIST, { recursive: true, force: true });
const common = { format: 'esm', platform: 'node', target: 'node20', logLevel: 'warning' };
await build({ ...common, entryPoints: files.filter((file) => isTypeScript(file) && !inPrismaClient(file)), outdir: DIST, outbase: SRC });
await build({ ...common, entryPoints: [join(PRISMA_CLIENT, 'client.ts')], bundle: true, packages: 'external', outfile: join(DIST, 'generated', 'prisma', 'client.js') });
for (const file of files) {
  if (file.endsWith('.ts') && !file.startsWith(KEPT_AS_SOURCE + '/')) continue;
  const target = join(DIST, relative(SRC, file));
  mkdirSync(dirname(target), { recursive: true });
  cpSync(file, target);
}
