import { compartmentTypes } from '../clinical/record-conditions.js';
import type { Database } from '../db/database.js';
import type { BinaryStorage } from '../storage/binary-storage.js';
import type { PageVersions } from './type-filter.js';

/** One NDJSON file of an export, as the manifest lists it. */
export interface ExportFile {
  type: string;
  /** Its name below the export's status URL: `Patient-1.ndjson`. */
  file: string;
  count: number;
}

/**
 * Where an export stands: recorded as the job's checkpoint after each file, once the file is
 * stored, so a resumed export starts with the next file and writes no line twice.
 */
export interface ExportPosition {
  transactionTime: string;
  types: string[];
  /** The type being exported: an index into `types`. */
  typeIndex: number;
  /** The last id written of that type; undefined at the type's start. */
  afterId?: string;
  files: ExportFile[];
  /**
   * Patient-level and Group exports: the patients whose compartments are exported (`all`: every
   * patient of the project); absent: every resource. Kept in the position so a resumed Group
   * export reads the members it started with.
   */
  patients?: string[] | 'all';
}

export interface ExportRun {
  db: Database;
  storage: BinaryStorage;
  projectId: string;
  jobId: string;
  since?: string;
  maxPerFile: number;
  signal?: AbortSignal;
  /** Called after each stored file with the new position. */
  onFile(position: ExportPosition): Promise<void>;
  /** `_typeFilter` and AccessPolicy criteria: which of a page's resources to write; undefined (or no answer) writes them all. */
  matching?: (type: string, page: PageVersions) => Promise<Set<string> | undefined>;
  /** `_elements`: each line's text rewritten; undefined copies the stored text as it is. */
  transform?: (type: string, text: string) => string;
  /** `Type/id` of resources never written, whatever asks for them (the Binaries of Bots' code). */
  withheld?: ReadonlySet<string>;
}

/** Rows read per statement: small enough for one statement's time, large enough to stream fast. */
const PAGE_SIZE = 1_000;
const NEWLINE = new Uint8Array([0x0a]);

/** The binary storage key of one of an export's files. */
export function exportFileKey(jobId: string, file: string): string {
  return `bulk-export/${jobId}/${file}`;
}

/**
 * Writes the export's files from `position` on: for each type, keyset pages of the resource table
 * (by id), their stored JSON text copied as it is, one line each, streamed into the binary storage
 * file by file. Stops between two files once `signal` is aborted. Answers the final position.
 */
export async function writeExportFiles(run: ExportRun, start: ExportPosition): Promise<ExportPosition> {
  let position = start;
  while (position.typeIndex < position.types.length && !run.signal?.aborted) {
    const type = position.types[position.typeIndex];
    const slice = { type, patients: position.patients, asOf: position.transactionTime };
    const written = await writeOneFile(run, slice, position.afterId, position.files.length + 1);
    if (!written) {
      position = { ...position, typeIndex: position.typeIndex + 1, afterId: undefined };
      continue;
    }
    position = written.full
      ? { ...position, afterId: written.lastId, files: [...position.files, written.file] }
      : { ...position, typeIndex: position.typeIndex + 1, afterId: undefined, files: [...position.files, written.file] };
    await run.onFile(position);
  }
  return position;
}

interface WrittenFile {
  file: ExportFile;
  lastId: string;
  /** The file holds `maxPerFile` resources: the type may have more. */
  full: boolean;
}

/** What one file reads: a type, within some patients' compartments or not, as it was at `asOf`. */
interface Slice {
  type: string;
  patients?: string[] | 'all';
  /** The export's transactionTime: each resource is written in its version current then. */
  asOf: string;
}

/** The next file of the slice after `afterId`, or undefined when it has no more resources. */
async function writeOneFile(run: ExportRun, slice: Slice, afterId: string | undefined, number: number): Promise<WrittenFile | undefined> {
  let requested = Math.min(PAGE_SIZE, run.maxPerFile);
  const first = await readPage(run, slice, afterId, requested);
  if (first.length === 0) return undefined;
  const { type } = slice;
  const name = `${type}-${number}.ndjson`;
  const key = exportFileKey(run.jobId, name);
  let count = 0;
  let lastId = afterId ?? '';
  const lines = async function* (): AsyncGenerator<Uint8Array> {
    let page = first;
    while (page.length > 0) {
      const kept = await run.matching?.(type, pageVersions(page));
      for (const row of page) {
        // No version at the export's time (created later, or deleted by then), filtered out, or withheld.
        if (row.content === null || (kept && !kept.has(row.id)) || run.withheld?.has(`${type}/${row.id}`)) continue;
        yield Buffer.from(run.transform ? run.transform(type, row.content) : row.content, 'utf8');
        yield NEWLINE;
        count++;
      }
      lastId = page[page.length - 1].id;
      const left = run.maxPerFile - count;
      const more = page.length === requested;
      requested = Math.min(PAGE_SIZE, left);
      page = left > 0 && more ? await readPage(run, slice, lastId, requested) : [];
    }
  };
  await run.storage.putStream(key, run.projectId, 'application/fhir+ndjson', lines());
  if (count === 0) {
    await run.storage.delete(key);
    return undefined;
  }
  return { file: { type, file: name, count }, lastId, full: count === run.maxPerFile };
}

/** A page's rows as a matcher takes them: those written in their current version, and the others' text. */
function pageVersions(page: readonly PageRow[]): PageVersions {
  const written = page.filter((row) => row.content !== null);
  return {
    current: written.filter((row) => !row.past).map((row) => row.id),
    past: written.filter((row) => row.past).map((row) => ({ id: row.id, content: row.content! })),
  };
}

interface PageRow {
  id: string;
  /** The version written, as stored; null when the resource did not exist at the export's time. */
  content: string | null;
  /** The resource changed since the export's time: `content` is an older version's. */
  past: boolean;
}

/**
 * A page of the slice's resources by id, each as it was at the export's time: the current version
 * when it is no newer, else the newest version of the history at or before that time (null for a
 * resource created later or deleted by then, which the file leaves out). A resource changed during
 * the export is thus written in its version of then, whatever the checkpoints in between.
 * The page is read along the primary key `(resourceType, id)`, in its order, with the project's
 * and time's conditions as one `IS TRUE` expression no index serves: a plan free to start from
 * the `(projectId, resourceType, lastUpdated, id)` index sorted every resource of the type for each
 * page (quadratic: 2,800 resources/s over 1,000,000 Observations).
 */
async function readPage(run: ExportRun, slice: Slice, afterId: string | undefined, limit: number): Promise<PageRow[]> {
  const args: unknown[] = [run.projectId, slice.type, afterId ?? '', run.since ?? null, limit, slice.asOf];
  const since = '($4::timestamptz IS NULL OR h."lastUpdated" > $4::timestamptz)';
  return run.db.query<PageRow>(
    `SELECT r.id, r."lastUpdated" > $6::timestamptz AS past, CASE
         WHEN r."lastUpdated" <= $6::timestamptz THEN CASE WHEN r.deleted THEN NULL ELSE r.content::text END
         ELSE (SELECT CASE WHEN h.deleted THEN NULL ELSE h.content::text END FROM resource_history h
               WHERE h."resourceType" = r."resourceType" AND h.id = r.id AND h."lastUpdated" <= $6::timestamptz AND ${since}
               ORDER BY h."lastUpdated" DESC, h."versionId" DESC LIMIT 1)
       END AS content
     FROM resource r
     WHERE "resourceType" = $2 AND id > $3 AND ("projectId" = $1 AND (NOT deleted OR "lastUpdated" > $6::timestamptz)
       AND ($4::timestamptz IS NULL OR "lastUpdated" > $4::timestamptz)) IS TRUE${compartmentCondition(slice, args)}
     ORDER BY "resourceType", id LIMIT $5`,
    args,
    { planOnce: slice.patients === undefined },
  );
}

/**
 * Within the patients' compartments: a Patient is one of them, a resource of a compartment type
 * has a `_compartment` reference row naming one (the rows Patient/$everything reads), and a
 * resource of another type (Practitioner, Organization, Medication...) is referenced by a
 * resource in one of those compartments, as $everything adds it.
 */
function compartmentCondition({ type, patients }: Slice, args: unknown[]): string {
  if (patients === undefined) return '';
  if (type === 'Patient') {
    if (patients === 'all') return '';
    args.push(JSON.stringify(patients));
    return ` AND r.id IN (SELECT json_array_elements_text($${args.length}::json))`;
  }
  let ofPatients = '';
  if (patients !== 'all') {
    args.push(JSON.stringify(patients));
    ofPatients = ` AND c."targetId" IN (SELECT json_array_elements_text($${args.length}::json))`;
  }
  const compartmentRows = `c."projectId" = $1 AND c.code = '_compartment' AND c."targetType" = 'Patient'${ofPatients}`;
  if (compartmentTypes().has(type)) {
    return ` AND EXISTS (SELECT 1 FROM reference_index c WHERE ${compartmentRows} AND c."resourceType" = r."resourceType" AND c."resourceId" = r.id)`;
  }
  return ` AND EXISTS (SELECT 1 FROM reference_index ref
         JOIN reference_index c ON c."resourceType" = ref."resourceType" AND c."resourceId" = ref."resourceId"
         WHERE ref."projectId" = $1 AND ref."targetType" = r."resourceType" AND ref."targetId" = r.id AND ref.code <> '_compartment'
           AND ${compartmentRows})`;
}

/** The resource types the project has resources of, in name order, less `excluded`. */
export async function projectTypes(db: Database, projectId: string, excluded: ReadonlySet<string>): Promise<string[]> {
  const rows = await db.query<{ resourceType: string }>(
    'SELECT DISTINCT "resourceType" FROM resource WHERE "projectId" = $1 AND NOT deleted ORDER BY "resourceType"',
    [projectId],
  );
  return rows.map((row) => row.resourceType).filter((type) => !excluded.has(type));
}
