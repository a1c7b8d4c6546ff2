import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';

/**
 * Builds a source tree's dist/ (its own scripts/build-dist.mjs) only when its sources changed
 * since the last build, under a lock shared by every bench on the machine. Two benches on one
 * tree (the session's base tree, most often) used to rebuild it each time they started a
 * server: the build removes dist/ first, so a server of the other bench that was starting, or
 * loading a module later (the PGlite worker, operation definitions), failed. Now the first
 * bench builds and leaves a stamp of what it built; the others find the stamp and start at once.
 */
export function buildTree(tree: string): void {
  const root = resolve(tree);
  const stampFile = join(root, 'dist', '.bench-sources');
  const stamp = sourcesStamp(root);
  if (readStamp(stampFile) === stamp) return;
  withLock(`build-${createHash('sha1').update(root).digest('hex').slice(0, 16)}`, () => {
    // Another bench may have built it while this one waited.
    if (readStamp(stampFile) === stamp) return;
    execFileSync(process.execPath, [join(root, 'scripts', 'build-dist.mjs')], { cwd: root, stdio: 'inherit' });
    writeFileSync(stampFile, stamp);
  });
}

/**
 * A bench script compiled to plain JavaScript (bench/.tmp/, next to the tree's node_modules), so
 * that it runs without tsx: perf then sees its JavaScript functions (with --perf-basic-prof)
 * instead of tsx's loader, and it pays no loader hooks per request. The file is named by the
 * source's hash and written whole by a rename: benches starting at once share it.
 */
export function compiledScript(source: URL): string {
  const path = fileURLToPath(source);
  const hash = createHash('sha1').update(readFileSync(path)).digest('hex').slice(0, 12);
  const folder = join(dirname(path), '.tmp');
  const out = join(folder, `${relative(dirname(path), path).replace(/\.ts$/, '')}-${hash}.mjs`);
  if (existsSync(out)) return out;
  mkdirSync(folder, { recursive: true });
  const partial = `${out}.${process.pid}`;
  buildSync({ entryPoints: [path], outfile: partial, bundle: true, packages: 'external', format: 'esm', platform: 'node', target: 'node20', logLevel: 'warning' });
  renameSync(partial, out);
  return out;
}

/** Paths, sizes and modification times of the files a build reads (src/ and the build script). */
function sourcesStamp(root: string): string {
  const hash = createHash('sha1');
  const files = [join(root, 'scripts', 'build-dist.mjs'), ...filesUnder(join(root, 'src'))].sort();
  for (const file of files) {
    const stat = statSync(file);
    hash.update(`${relative(root, file)}\0${stat.size}\0${stat.mtimeMs}\n`);
  }
  return hash.digest('hex');
}

function filesUnder(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

function readStamp(file: string): string | undefined {
  return existsSync(file) ? readFileSync(file, 'utf8') : undefined;
}

/** A lock taken by creating a directory (atomic); one older than STALE_MS is a crashed bench's, and is taken over. */
const STALE_MS = 5 * 60_000;

function withLock(name: string, work: () => void): void {
  const lock = join(tmpdir(), `flint-bench-${name}.lock`);
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (Date.now() - lockTime(lock) > STALE_MS) rmSync(lock, { recursive: true, force: true });
      else Atomics.wait(sleeper, 0, 0, 200);
    }
  }
  try {
    work();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function lockTime(lock: string): number {
  try {
    return statSync(lock).mtimeMs;
  } catch {
    return Date.now();
  }
}
