import type { CodeSystemProperty, SystemRef, TerminologyCaller } from './types.js';
import type { Database } from '../db/database.js';
import { errors } from '../fhir/outcome.js';
import type { CodeSystem } from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';
import { requestCache } from './cache.js';
import { shippedCodeSystem } from '../fhir/terminology-catalogue.js';
import { deleteSystem, indexCodeSystem } from './indexing.js';

/** The shared scope of the concept tables: the shipped R4 code systems, visible to every project. */
export const SHARED_SCOPE = '';
const SHARED_LOAD_LOCK = 7_346_012;



/**
 * System rows are read with hand-written SQL, like the rest of the terminology tables: these reads
 * also run inside a write's transaction (an AccessPolicy criterion with `:in` expands its value set
 * there, through the stand-in Database of search/value-sets.ts), where the Prisma client, which
 * runs outside any transaction, would neither see the transaction's rows nor, on the embedded
 * database, get the connection the transaction holds (src/db/database.ts).
 */
interface SystemRow {
  id: string;
  url: string;
  version: string;
  name: string | null;
  properties: string | null;
  resourceId: string | null;
}

/** Loads under way or done, per database (a test process may open several). */
const sharedLoads = new WeakMap<Database, Map<string, Promise<void>>>();

/**
 * The code system `url` (at `version`, or the latest indexed) as the caller sees it: the caller's
 * project first, then the shared R4 code systems (indexed on first use). Undefined when unknown.
 */
export async function findSystem(ctx: TerminologyCaller, db: Database, url: string, version?: string): Promise<SystemRef | undefined> {
  const cache = await requestCache(ctx, db);
  if (!cache) return resolveSystem(ctx, db, url, version);
  return cache.resolved(`CodeSystem|${ctx.identity.projectId}|${url}|${version ?? ''}`, () => resolveSystem(ctx, db, url, version));
}

async function resolveSystem(ctx: TerminologyCaller, db: Database, url: string, version?: string): Promise<SystemRef | undefined> {
  const found = await querySystem(db, ctx.identity.projectId, url, version);
  if (found) return found;
  const shipped = shippedCodeSystem(url);
  if (!shipped || (version !== undefined && shipped.version !== version)) return undefined;
  await loadShared(db, url, shipped);
  return querySystem(db, ctx.identity.projectId, url, version);
}

/** Like findSystem, but a missing system is 404 not-found naming it. */
export async function requireSystem(ctx: TerminologyCaller, db: Database, url: string, version?: string): Promise<SystemRef> {
  const system = await findSystem(ctx, db, url, version);
  if (!system) {
    throw errors.notFound(`Code system ${url}${version !== undefined ? ` version ${version}` : ''} not found`);
  }
  return system;
}

/** The system indexed from one CodeSystem resource (instance-level operations). */
export async function systemOfResource(db: Database, codeSystem: Resource, ctx?: TerminologyCaller): Promise<SystemRef> {
  const cache = ctx && (await requestCache(ctx, db));
  if (!cache) return readSystemOfResource(db, codeSystem);
  return cache.resolved(`CodeSystem/${codeSystem.id}`, () => readSystemOfResource(db, codeSystem));
}

async function readSystemOfResource(db: Database, codeSystem: Resource): Promise<SystemRef> {
  const rows = await db.query<SystemRow>(
    `SELECT id::text AS id, url, version, name, properties::text AS properties, "resourceId" FROM terminology_system WHERE "resourceId" = $1`,
    [codeSystem.id],
  );
  if (!rows[0]) throw errors.notFound(`CodeSystem/${codeSystem.id} has no url, so it has no indexed concepts`);
  return toRef(rows[0]);
}

async function querySystem(db: Database, projectId: string, url: string, version?: string): Promise<SystemRef | undefined> {
  const args: unknown[] = [projectId, url];
  if (version !== undefined) args.push(version);
  const rows = await db.query<SystemRow>(
    `SELECT id::text AS id, url, version, name, properties::text AS properties, "resourceId" FROM terminology_system
     WHERE "projectId" IN ($1, '') AND url = $2 ${version !== undefined ? 'AND version = $3' : ''}
     ORDER BY ("projectId" = '') ASC, "createdAt" DESC LIMIT 1`,
    args,
  );
  return rows[0] ? toRef(rows[0]) : undefined;
}

function toRef(row: SystemRow): SystemRef {
  return { ...row, properties: row.properties ? (JSON.parse(row.properties) as CodeSystemProperty[]) : [] };
}

/** Indexes the shipped code system `url` into the shared scope once (per process, and across servers by a lock). */
function loadShared(db: Database, url: string, codeSystem: CodeSystem): Promise<void> {
  let loads = sharedLoads.get(db);
  if (!loads) sharedLoads.set(db, (loads = new Map()));
  let load = loads.get(url);
  if (!load) {
    load = db
      .transaction(async (tx) => {
        await tx.execute(`SELECT pg_advisory_xact_lock(${SHARED_LOAD_LOCK})`);
        const existing = await tx.query(`SELECT 1 FROM terminology_system WHERE "projectId" = '' AND url = $1`, [url]);
        if (existing.length > 0) return;
        await deleteSystem(tx, `"projectId" = '' AND url = $1`, [url]);
        await indexCodeSystem(tx, SHARED_SCOPE, null, codeSystem);
      }, 'bulk')
      .catch((error: unknown) => {
        loads.delete(url);
        throw error;
      });
    loads.set(url, load);
  }
  return load;
}
