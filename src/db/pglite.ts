import { mkdirSync } from 'node:fs';
import { readFile, rename, writeFile } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';

const MEMORY = 'memory://';
/** Extensions the migrations create (0016_string_contains: trigram index for `:contains`). */
const EXTENSIONS = { pg_trgm };

/**
 * Opens the embedded database: `memory://` for a throw-away one, `memory://<file>` for a throw-away
 * one that starts as a copy of a data folder dumped to `<file>` (dumpPGlite; the tests start every
 * server from one migrated dump instead of migrating each), otherwise a folder under DATA_DIR.
 */
export async function openPGlite(dataDir: string): Promise<PGlite> {
  let pglite: PGlite;
  if (dataDir.startsWith(MEMORY)) {
    const dump = dataDir.slice(MEMORY.length);
    pglite = await PGlite.create(MEMORY, { extensions: EXTENSIONS, ...(dump ? { loadDataDir: new Blob([await readFile(dump)]) } : {}) });
  } else {
    mkdirSync(dataDir, { recursive: true });
    pglite = await PGlite.create(`${dataDir.replace(/\/$/, '')}/pglite`, { extensions: EXTENSIONS });
  }
  trimPGliteParsers(pglite);
  return pglite;
}

/**
 * Writes the data folder of an open embedded database to `file` (an uncompressed tar), for
 * `memory://<file>` to start from. Written to a temporary name and renamed, so that a reader never
 * sees half a dump.
 */
export async function dumpPGlite(pglite: PGlite, file: string): Promise<void> {
  const dump = await pglite.dumpDataDir('none');
  const partial = `${file}.${process.pid}.partial`;
  await writeFile(partial, new Uint8Array(await dump.arrayBuffer()));
  await rename(partial, file);
}

/** Type OIDs whose default PGlite parsers Flint relies on: bool, int2/4/8, oid, float4/8, json, jsonb. */
const PARSED_TYPE_OIDS = [16, 20, 21, 23, 26, 700, 701, 114, 3802];

/**
 * PGlite copies its whole parser table (300+ types) on every query, a large share of its CPU time
 * (measured: see bench/RESULTS.md); every other type is read as text, which is what the driver
 * adapter expects anyway.
 */
function trimPGliteParsers(pglite: PGlite): void {
  const all = pglite.parsers;
  pglite.parsers = Object.fromEntries(PARSED_TYPE_OIDS.filter((oid) => oid in all).map((oid) => [oid, all[oid]]));
}
