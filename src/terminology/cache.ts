import type { ConceptDetail, LoadedSystem, TerminologyCaller } from './types.js';
import { Database, type SqlExecutor } from '../db/database.js';

/**
 * In-memory terminology (for speed): code systems of up to MAX_SYSTEM_CONCEPTS concepts are
 * read whole into memory on first use, and the results of resolving a code system or value set
 * url are kept, so that $lookup, $validate-code and $expand answer from memory.
 *
 * Staying correct: every change to the concept tables, and every write of a CodeSystem or
 * ValueSet, raises the terminology revision in its own transaction (terminologyChanged):
 * - this process also raises a process-wide generation, so its own caches are dropped at once;
 * - on PGlite this process is the sole writer of its database, and a transaction holds the one
 *   connection until it ends, so the generation alone is exact: nothing is read from the database
 *   to check freshness;
 * - on PostgreSQL other servers may write, so each request reads the revision row once (one
 *   primary-key read) and drops everything when it moved. What a request reads from the concept
 *   tables is never older than the revision it read first.
 * Caches are replaced, never edited, when dropped: a load still running for the old ones finishes
 * into a map nobody reads any more.
 */

/**
 * Largest code system read whole into memory; larger ones are queried concept by concept. The
 * environment variable TERMINOLOGY_MEMORY_CONCEPTS overrides it (0: every system in SQL), read when
 * a server first uses terminology.
 */
const DEFAULT_MAX_SYSTEM_CONCEPTS = 250_000;
/**
 * Concepts kept in memory across code systems per database (about 220 bytes each when they have
 * few designations and properties); the least recently used systems go first.
 */
const MAX_CACHED_CONCEPTS = 500_000;
/** Resolved code system and value set urls kept per database. */
const MAX_RESOLVED = 10_000;


/** Raised by every change this process makes to terminology (see above). */
let generation = 0;

/**
 * Records a change to terminology in transaction `tx`: other servers see the new revision when
 * it commits; this process drops its caches now (a change rolled back only costs a reload).
 */
export async function terminologyChanged(tx: SqlExecutor): Promise<void> {
  generation++;
  await tx.execute('UPDATE terminology_revision SET revision = revision + 1 WHERE id = 1');
}

interface Maps {
  systems: Map<string, Promise<unknown>>;
  loaded: Map<string, Promise<LoadedSystem | undefined>>;
  /** Concepts of each system loaded so far (systems still loading are not in it). */
  sizes: Map<string, number>;
  loadedConcepts: number;
}

export class TerminologyCache {
  private maps: Maps = freshMaps();
  private seenGeneration = generation;
  private seenRevision: string | undefined;

  constructor(
    private readonly db: Database,
    private readonly maxSystemConcepts: number,
  ) {}

  /** Drops what is stale: compares the generation, and on PostgreSQL the revision row. */
  async sync(): Promise<void> {
    if (this.seenGeneration !== generation) this.drop();
    if (this.db.kind !== 'postgres') return;
    const revision = await this.readRevision();
    if (revision !== this.seenRevision) {
      this.drop();
      this.seenRevision = revision;
    }
  }

  private reading: Promise<string> | undefined;
  private queued: Promise<string> | undefined;

  /**
   * The revision row as committed after this call began. One read per terminology request on
   * PostgreSQL, so hand-written SQL on the adapter (src/db/database.ts); the row is raised in the
   * transactions of terminology writes (terminologyChanged), on the adapter too. Concurrent requests share reads: a read
   * already under way may have been sent before this call, so a caller joins the read queued to
   * start when it finishes (one per batch of callers), never the one under way.
   */
  private readRevision(): Promise<string> {
    if (!this.reading) {
      this.reading = this.db
        .query<{ revision: unknown }>('SELECT revision FROM terminology_revision WHERE id = 1')
        .then((rows) => String(rows[0]?.revision ?? ''))
        .finally(() => {
          this.reading = undefined;
        });
      return this.reading;
    }
    this.queued ??= this.reading
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.readRevision();
      });
    return this.queued;
  }

  /** A resolved url (code system or value set), computed once per revision. */
  resolved<T>(key: string, resolve: () => Promise<T>): Promise<T> {
    const { systems } = this.maps;
    let found = systems.get(key) as Promise<T> | undefined;
    if (!found) {
      if (systems.size >= MAX_RESOLVED) systems.clear();
      found = resolve();
      systems.set(key, found);
      found.catch(() => systems.delete(key));
    }
    return found;
  }

  /** The code system `systemId` in memory, loaded on first use; undefined when it is too large. */
  system(systemId: string): Promise<LoadedSystem | undefined> {
    const maps = this.maps;
    let found = maps.loaded.get(systemId);
    if (found) {
      // Most recently used last: eviction takes the first.
      maps.loaded.delete(systemId);
      maps.loaded.set(systemId, found);
      return found;
    }
    found = loadSystem(this.db, systemId, this.maxSystemConcepts).then((loaded) => {
      if (loaded) this.account(maps, systemId, loaded.concepts.length);
      return loaded;
    });
    maps.loaded.set(systemId, found);
    found.catch(() => maps.loaded.delete(systemId));
    return found;
  }

  /** Counts a loaded system, then evicts the least recently used loaded systems beyond the budget. */
  private account(maps: Maps, systemId: string, size: number): void {
    if (!maps.loaded.has(systemId)) return;
    maps.sizes.set(systemId, size);
    maps.loadedConcepts += size;
    for (const id of [...maps.loaded.keys()]) {
      if (maps.loadedConcepts <= MAX_CACHED_CONCEPTS) break;
      const evicted = maps.sizes.get(id);
      if (id === systemId || evicted === undefined) continue;
      maps.loaded.delete(id);
      maps.sizes.delete(id);
      maps.loadedConcepts -= evicted;
    }
  }

  private drop(): void {
    this.maps = freshMaps();
    this.seenGeneration = generation;
  }
}

function freshMaps(): Maps {
  return { systems: new Map(), loaded: new Map(), sizes: new Map(), loadedConcepts: 0 };
}

const caches = new WeakMap<Database, TerminologyCache>();
const synced = new WeakMap<TerminologyCaller, Promise<TerminologyCache | undefined>>();

/**
 * The terminology cache of a request, checked for freshness once per request. Undefined when the
 * request runs on something other than the database itself (a search inside a write's
 * transaction, which may see changes not yet committed) or has no request context of its own.
 */
export function requestCache(ctx: TerminologyCaller, db: Database): Promise<TerminologyCache | undefined> {
  if (!(db instanceof Database) || typeof ctx.requestId !== 'string') return Promise.resolve(undefined);
  let found = synced.get(ctx);
  if (!found) {
    let cache = caches.get(db);
    if (!cache) caches.set(db, (cache = new TerminologyCache(db, maxSystemConcepts())));
    const ready = cache;
    found = ready.sync().then(() => ready);
    synced.set(ctx, found);
  }
  return found;
}

/** The empty list concepts without designations (properties, ...) share; frozen, replaced on first append. */
function maxSystemConcepts(): number {
  const configured = Number(process.env.TERMINOLOGY_MEMORY_CONCEPTS);
  return process.env.TERMINOLOGY_MEMORY_CONCEPTS && Number.isInteger(configured) && configured >= 0 ? configured : DEFAULT_MAX_SYSTEM_CONCEPTS;
}

const NONE: never[] = Object.freeze([]) as never[];

interface ConceptRow {
  code: string;
  display: string | null;
  definition: string | null;
  abstract: boolean;
  inactive: boolean;
}

/** Reads one code system whole (five statements), or undefined when it has more than `max` concepts. */
async function loadSystem(db: Database, systemId: string, max: number): Promise<LoadedSystem | undefined> {
  if (max === 0) return undefined;
  // Counted first (an index-only scan) so that a system too large is not transferred to find out.
  const [{ count }] = await db.query<{ count: unknown }>(
    `SELECT count(*) AS count FROM (SELECT 1 FROM terminology_concept WHERE "systemId" = $1::uuid LIMIT $2) x`,
    [systemId, max + 1],
  );
  if (Number(count) > max) return undefined;
  const rows = await db.query<ConceptRow>(
    `SELECT code, display, definition, abstract, inactive FROM terminology_concept WHERE "systemId" = $1::uuid ORDER BY seq`,
    [systemId],
  );
  const byCode = new Map<string, ConceptDetail>();
  const concepts: ConceptDetail[] = rows.map((row) => {
    // Object literals of one shape (rows are built key by key, and spreading them gives slow objects).
    const concept: ConceptDetail = {
      code: row.code,
      display: row.display,
      definition: row.definition,
      abstract: row.abstract,
      inactive: row.inactive,
      designations: NONE,
      properties: NONE,
      parents: NONE,
      children: NONE,
    };
    byCode.set(row.code, concept);
    return concept;
  });
  const designations = await db.query<ConceptDetail['designations'][number] & { code: string }>(
    `SELECT code, language, "useSystem", "useCode", "useDisplay", value FROM terminology_designation WHERE "systemId" = $1::uuid ORDER BY code, seq`,
    [systemId],
  );
  for (const d of designations) {
    const designation = { language: d.language, useSystem: d.useSystem, useCode: d.useCode, useDisplay: d.useDisplay, value: d.value };
    append(byCode.get(d.code), 'designations', designation);
  }
  const properties = await db.query<ConceptDetail['properties'][number] & { code: string }>(
    `SELECT code, property, type, value FROM terminology_property WHERE "systemId" = $1::uuid ORDER BY code, seq`,
    [systemId],
  );
  for (const p of properties) append(byCode.get(p.code), 'properties', { property: p.property, type: p.type, value: p.value });
  const links = await db.query<{ parent: string; child: string }>(
    `SELECT parent, child FROM terminology_hierarchy WHERE "systemId" = $1::uuid ORDER BY parent, child`,
    [systemId],
  );
  const parentsOf = new Map<string, string[]>();
  const childrenOf = new Map<string, string[]>();
  for (const { parent, child } of links) {
    const list = parentsOf.get(child);
    if (list) list.push(parent);
    else parentsOf.set(child, [parent]);
    const children = childrenOf.get(parent);
    if (children) children.push(child);
    else childrenOf.set(parent, [child]);
    append(byCode.get(parent), 'children', child);
    append(byCode.get(child), 'parents', parent);
  }
  return { concepts, byCode, parentsOf, childrenOf, below: new Map() };
}

/** Appends to one of a concept's lists, replacing the shared empty list on first use. */
function append<K extends 'designations' | 'properties' | 'parents' | 'children'>(
  concept: ConceptDetail | undefined,
  key: K,
  value: ConceptDetail[K][number],
): void {
  if (!concept) return;
  const list = concept[key] as unknown[];
  if (list === NONE) (concept[key] as unknown[]) = [value];
  else list.push(value);
}
