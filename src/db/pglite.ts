import { mkdirSync } from 'node:fs';
import { PGlite } from '@electric-sql/pglite';

/** Opens the embedded database: `memory://` for a throw-away one, otherwise a folder under DATA_DIR. */
export async function openPGlite(dataDir: string): Promise<PGlite> {
  let pglite: PGlite;
  if (dataDir.startsWith('memory://')) {
    pglite = await PGlite.create(dataDir);
  } else {
    mkdirSync(dataDir, { recursive: true });
    pglite = await PGlite.create(`${dataDir.replace(/\/$/, '')}/pglite`);
  }
  trimPGliteParsers(pglite);
  return pglite;
}

/** Type OIDs whose default PGlite parsers Flint relies on: bool, int2/4/8, oid, float4/8, json, jsonb. */
const PARSED_TYPE_OIDS = [16, 20, 21, 23, 26, 700, 701, 114, 3802];

/**
 * PGlite copies its whole parser table (300+ types) on every query, which measured as a third of
 * its CPU time; every other type is read as text, which is what the driver adapter expects anyway.
 */
function trimPGliteParsers(pglite: PGlite): void {
  const all = pglite.parsers;
  pglite.parsers = Object.fromEntries(PARSED_TYPE_OIDS.filter((oid) => oid in all).map((oid) => [oid, all[oid]]));
}
