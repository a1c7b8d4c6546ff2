import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { migrate, pgliteMigrationTarget } from '../../src/db/migrate.js';
import { dumpPGlite, openPGlite } from '../../src/db/pglite.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * A dump of an embedded database with every migration applied, built once per run: testEnv()
     * starts each server on a copy of it (`DATA_DIR=memory://<dump>`) instead of migrating an empty
     * one. Unset on PostgreSQL (DATABASE_URL), or when it could not be built.
     */
    pgliteTemplate: string | undefined;
  }
}

/** One build per run: vitest calls this once per project (and for the root project) in one process. */
const BUILD = Symbol.for('flint.test.pgliteTemplate');
type Build = { dir: string; dump: Promise<string | undefined> };
const state = globalThis as { [BUILD]?: Build };

/** vitest globalSetup (vitest.config.ts): builds the migrated dump, removes it after the run. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (!state[BUILD] && !process.env.DATABASE_URL) {
    const dir = await mkdtemp(join(tmpdir(), 'flint-test-pglite-'));
    state[BUILD] = { dir, dump: buildTemplate(join(dir, 'migrated.tar')) };
  }
  const build = state[BUILD];
  project.provide('pgliteTemplate', await build?.dump);
  return async () => {
    if (state[BUILD] !== build || !build) return;
    state[BUILD] = undefined;
    await rm(build.dir, { recursive: true, force: true });
  };
}

/** Migrates an empty in-memory database and dumps it; undefined (each server migrates) when that fails. */
async function buildTemplate(file: string): Promise<string | undefined> {
  try {
    const pglite = await openPGlite('memory://');
    try {
      await migrate(pgliteMigrationTarget(pglite));
      await dumpPGlite(pglite, file);
    } finally {
      await pglite.close();
    }
    return file;
  } catch (error) {
    console.warn(`Test servers migrate their own databases: the migrated template could not be built (${String(error)})`);
    return undefined;
  }
}
