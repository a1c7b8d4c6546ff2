import { randomUUID } from 'node:crypto';
import type { SqlExecutor } from '../db/database.js';
import { type CodeSystem } from '../fhir/resources.js';
import { asResourceOf } from '../fhir/typed-resources.js';
import { isRecord } from '../fhir/types.js';
import type { WriteHook } from '../storage/write-hooks.js';
import { terminologyChanged } from './cache.js';
import { checkRegexFilters } from './regex-filter.js';

/**
 * Concept tables (prisma/schema.prisma, Terminology*): a CodeSystem is flattened into concept,
 * designation, property and hierarchy rows, each kind inserted from one JSON parameter. Bulk
 * statements in the transaction of the CodeSystem's write (or of $import), so hand-written SQL on
 * that transaction's adapter, the terminology_system row included; src/db/database.ts.
 */
export interface ConceptRow {
  code: string;
  seq: number;
  display: string | null;
  definition: string | null;
  abstract: boolean;
  inactive: boolean;
}
export interface DesignationRow {
  code: string;
  seq: number;
  language: string | null;
  useSystem: string | null;
  useCode: string | null;
  useDisplay: string | null;
  value: string;
}
export interface PropertyRow {
  code: string;
  seq: number;
  property: string;
  type: string;
  value: string;
}
export interface HierarchyRow {
  parent: string;
  child: string;
}
export interface ConceptRows {
  concepts: ConceptRow[];
  designations: DesignationRow[];
  properties: PropertyRow[];
  hierarchy: HierarchyRow[];
}

interface Concept {
  code?: unknown;
  display?: unknown;
  definition?: unknown;
  designation?: unknown;
  property?: unknown;
  concept?: unknown;
}

/** Flattens nested concepts; `parent`/`child` properties become hierarchy rows, not properties. */
export function conceptRows(concepts: unknown, startSeq = 0): ConceptRows {
  const rows: ConceptRows = { concepts: [], designations: [], properties: [], hierarchy: [] };
  let seq = startSeq;
  const walk = (list: unknown, parent: string | undefined) => {
    if (!Array.isArray(list)) return;
    for (const concept of list as Concept[]) {
      if (!isRecord(concept) || typeof concept.code !== 'string') continue;
      const code = concept.code;
      const mySeq = seq++;
      let abstract = false;
      let inactive = false;
      if (parent !== undefined) rows.hierarchy.push({ parent, child: code });
      for (const designation of Array.isArray(concept.designation) ? concept.designation : []) {
        if (!isRecord(designation) || typeof designation.value !== 'string') continue;
        const use = isRecord(designation.use) ? designation.use : {};
        rows.designations.push({
          code,
          seq: rows.designations.length,
          language: str(designation.language),
          useSystem: str(use.system),
          useCode: str(use.code),
          useDisplay: str(use.display),
          value: designation.value,
        });
      }
      for (const property of Array.isArray(concept.property) ? concept.property : []) {
        if (!isRecord(property) || typeof property.code !== 'string') continue;
        const valueKey = Object.keys(property).find((key) => key.startsWith('value'));
        if (!valueKey) continue;
        const value = property[valueKey];
        const type = typeOf(valueKey);
        const text = typeof value === 'object' ? JSON.stringify(value) : String(value);
        if (property.code === 'parent' && typeof value === 'string') rows.hierarchy.push({ parent: value, child: code });
        else if (property.code === 'child' && typeof value === 'string') rows.hierarchy.push({ parent: code, child: value });
        else {
          if ((property.code === 'notSelectable' || property.code === 'abstract') && value === true) abstract = true;
          if ((property.code === 'inactive' && value === true) || (property.code === 'status' && (value === 'retired' || value === 'inactive'))) inactive = true;
          rows.properties.push({ code, seq: rows.properties.length, property: property.code, type, value: text });
        }
      }
      rows.concepts.push({ code, seq: mySeq, display: str(concept.display), definition: str(concept.definition), abstract, inactive });
      walk(concept.concept, code);
    }
  };
  walk(concepts, undefined);
  return rows;
}

function str(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/** valueCode → code, valueCoding → Coding. */
function typeOf(valueKey: string): string {
  const suffix = valueKey.slice(5);
  return /^(Coding|Quantity|CodeableConcept)$/.test(suffix) ? suffix : suffix[0].toLowerCase() + suffix.slice(1);
}

/** Inserts concept rows of one system in one statement; existing codes are left as they are. */
export async function insertConceptRows(tx: SqlExecutor, systemId: string, rows: ConceptRows): Promise<void> {
  if (rows.concepts.length + rows.hierarchy.length + rows.properties.length + rows.designations.length === 0) return;
  await tx.execute(
    `WITH c AS (INSERT INTO terminology_concept ("systemId", code, seq, display, definition, abstract, inactive)
       SELECT $1::uuid, code, seq, display, definition, abstract, inactive
       FROM json_to_recordset($2::json) AS x(code text, seq int, display text, definition text, abstract boolean, inactive boolean)
       ON CONFLICT DO NOTHING),
     d AS (INSERT INTO terminology_designation ("systemId", code, seq, language, "useSystem", "useCode", "useDisplay", value)
       SELECT $1::uuid, code, seq, language, "useSystem", "useCode", "useDisplay", value
       FROM json_to_recordset($3::json) AS x(code text, seq int, language text, "useSystem" text, "useCode" text, "useDisplay" text, value text)
       ON CONFLICT DO NOTHING),
     p AS (INSERT INTO terminology_property ("systemId", code, seq, property, type, value)
       SELECT $1::uuid, code, seq, property, type, value
       FROM json_to_recordset($4::json) AS x(code text, seq int, property text, type text, value text)
       ON CONFLICT DO NOTHING)
     INSERT INTO terminology_hierarchy ("systemId", parent, child)
       SELECT DISTINCT $1::uuid, parent, child FROM json_to_recordset($5::json) AS x(parent text, child text)
       ON CONFLICT DO NOTHING`,
    [systemId, JSON.stringify(rows.concepts), JSON.stringify(rows.designations), JSON.stringify(rows.properties), JSON.stringify(rows.hierarchy)],
  );
}

/**
 * Creates the terminology_system row of a code system and indexes its concepts. The CodeSystem is
 * a stored (validated) or shipped one; its concepts are still read defensively (conceptRows).
 */
export async function indexCodeSystem(tx: SqlExecutor, projectId: string, resourceId: string | null, codeSystem: CodeSystem): Promise<string> {
  const id = randomUUID();
  await tx.execute(
    `INSERT INTO terminology_system (id, "projectId", url, version, "resourceId", name, properties, "hierarchyMeaning", "caseSensitive")
     VALUES ($1::uuid, $2, $3, $4, $5, $6, $7::json, $8, $9)`,
    [
      id,
      projectId,
      codeSystem.url ?? '',
      codeSystem.version ?? '',
      resourceId,
      codeSystem.title ?? codeSystem.name ?? null,
      JSON.stringify(codeSystem.property ?? []),
      codeSystem.hierarchyMeaning ?? null,
      codeSystem.caseSensitive !== false,
    ],
  );
  await insertConceptRows(tx, id, conceptRows(codeSystem.concept));
  await rebuildClosure(tx, id);
  await terminologyChanged(tx);
  return id;
}

/**
 * Recomputes the transitive closure of one system's hierarchy (terminology_closure), so that
 * is-a, descendent-of and subsumption are index lookups. Cycles end because UNION drops pairs
 * already found.
 */
export async function rebuildClosure(tx: SqlExecutor, systemId: string): Promise<void> {
  await tx.execute('DELETE FROM terminology_closure WHERE "systemId" = $1::uuid', [systemId]);
  await tx.execute(
    `INSERT INTO terminology_closure ("systemId", ancestor, descendant, seq)
     SELECT $1::uuid, t.ancestor, t.descendant, c.seq
     FROM (WITH RECURSIVE t(ancestor, descendant) AS (
             SELECT parent, child FROM terminology_hierarchy WHERE "systemId" = $1::uuid
             UNION
             SELECT t.ancestor, h.child FROM t JOIN terminology_hierarchy h ON h."systemId" = $1::uuid AND h.parent = t.descendant)
           SELECT ancestor, descendant FROM t WHERE ancestor <> descendant) t
     JOIN terminology_concept c ON c."systemId" = $1::uuid AND c.code = t.descendant
     ON CONFLICT DO NOTHING`,
    [systemId],
  );
}

/** Deletes a system row and every row hanging off it. */
export async function deleteSystem(tx: SqlExecutor, where: string, args: unknown[]): Promise<void> {
  await tx.execute(
    `WITH s AS (DELETE FROM terminology_system WHERE ${where} RETURNING id),
       c AS (DELETE FROM terminology_concept WHERE "systemId" IN (SELECT id FROM s)),
       d AS (DELETE FROM terminology_designation WHERE "systemId" IN (SELECT id FROM s)),
       p AS (DELETE FROM terminology_property WHERE "systemId" IN (SELECT id FROM s)),
       x AS (DELETE FROM terminology_closure WHERE "systemId" IN (SELECT id FROM s))
     DELETE FROM terminology_hierarchy WHERE "systemId" IN (SELECT id FROM s)`,
    args,
  );
}

/**
 * Gives the system indexed from CodeSystem `toResourceId` the concept rows of the system indexed
 * from `fromResourceId` (Project/$clone, after the copy's write hook indexed it): concepts,
 * displays and flags added by CodeSystem/$import are not in the resource, so indexing the copied
 * resource alone would lose them. Nothing happens unless both systems are indexed.
 */
export async function copyIndexedConcepts(tx: SqlExecutor, fromResourceId: string, toResourceId: string): Promise<void> {
  await terminologyChanged(tx);
  const pair = `pair AS (SELECT s.id AS src, d.id AS dst FROM terminology_system s, terminology_system d
                         WHERE s."resourceId" = $1 AND d."resourceId" = $2)`;
  await tx.execute(
    `WITH ${pair},
       c AS (DELETE FROM terminology_concept WHERE "systemId" IN (SELECT dst FROM pair)),
       d AS (DELETE FROM terminology_designation WHERE "systemId" IN (SELECT dst FROM pair)),
       p AS (DELETE FROM terminology_property WHERE "systemId" IN (SELECT dst FROM pair)),
       x AS (DELETE FROM terminology_closure WHERE "systemId" IN (SELECT dst FROM pair))
     DELETE FROM terminology_hierarchy WHERE "systemId" IN (SELECT dst FROM pair)`,
    [fromResourceId, toResourceId],
  );
  await tx.execute(
    `WITH ${pair},
       c AS (INSERT INTO terminology_concept ("systemId", code, seq, display, definition, abstract, inactive)
         SELECT pair.dst, code, seq, display, definition, abstract, inactive FROM terminology_concept t JOIN pair ON t."systemId" = pair.src),
       d AS (INSERT INTO terminology_designation ("systemId", code, seq, language, "useSystem", "useCode", "useDisplay", value)
         SELECT pair.dst, code, seq, language, "useSystem", "useCode", "useDisplay", value FROM terminology_designation t JOIN pair ON t."systemId" = pair.src),
       p AS (INSERT INTO terminology_property ("systemId", code, seq, property, type, value)
         SELECT pair.dst, code, seq, property, type, value FROM terminology_property t JOIN pair ON t."systemId" = pair.src),
       h AS (INSERT INTO terminology_hierarchy ("systemId", parent, child)
         SELECT pair.dst, parent, child FROM terminology_hierarchy t JOIN pair ON t."systemId" = pair.src)
     INSERT INTO terminology_closure ("systemId", ancestor, descendant, seq)
       SELECT pair.dst, ancestor, descendant, seq FROM terminology_closure t JOIN pair ON t."systemId" = pair.src`,
    [fromResourceId, toResourceId],
  );
}

/**
 * The write hook of CodeSystem: its concepts are re-indexed in the write's transaction. An update
 * that carries no concept list and keeps url and version keeps the concepts already indexed (those
 * added by CodeSystem/$import).
 */
const codeSystemWriteHook: WriteHook = async (tx, change) => {
  await terminologyChanged(tx);
  // The hook runs after the write validated the resource.
  const resource = change.resource ? asResourceOf(change.resource, 'CodeSystem') : undefined;
  if (resource && !resource.concept) {
    const kept = await tx.execute(
      `UPDATE terminology_system SET name = $2, properties = $3::json, "hierarchyMeaning" = $4
       WHERE "resourceId" = $1 AND url = $5 AND version = $6`,
      [
        change.id,
        resource.title ?? resource.name ?? null,
        JSON.stringify(resource.property ?? []),
        resource.hierarchyMeaning ?? null,
        resource.url ?? '',
        resource.version ?? '',
      ],
    );
    if (kept > 0) return;
  }
  await deleteSystem(tx, '"resourceId" = $1', [change.id]);
  if (resource?.url) await indexCodeSystem(tx, change.projectId, change.id, resource);
};

/**
 * Value sets are kept in memory by url (resources.ts): any ValueSet write makes them stale. A
 * written ValueSet's regex filters must compile.
 */
const valueSetWriteHook: WriteHook = async (tx, change) => {
  if (change.resource) await checkRegexFilters(tx, change.resource);
  await terminologyChanged(tx);
};

/** The terminology tables' write hooks (the composition root installs them). */
export const terminologyWriteHooks: readonly (readonly [string, WriteHook])[] = [
  ['CodeSystem', codeSystemWriteHook],
  ['ValueSet', valueSetWriteHook],
];
