import type { ConceptDetail, SystemRef } from './types.js';
import type { Database } from '../db/database.js';


interface Row {
  code: string;
  display: string | null;
  definition: string | null;
  abstract: boolean;
  inactive: boolean;
  designations: string | null;
  properties: string | null;
  parents: string | null;
  children: string | null;
}

/** The columns $lookup returns for concept `c`: designations, properties, parents and children as JSON. */
const CONCEPT_COLUMNS = `c.code, c.display, c.definition, c.abstract, c.inactive,
   (SELECT json_agg(json_build_object('language', d.language, 'useSystem', d."useSystem", 'useCode', d."useCode",
           'useDisplay', d."useDisplay", 'value', d.value) ORDER BY d.seq)::text
      FROM terminology_designation d WHERE d."systemId" = c."systemId" AND d.code = c.code) AS designations,
   (SELECT json_agg(json_build_object('property', p.property, 'type', p.type, 'value', p.value) ORDER BY p.seq)::text
      FROM terminology_property p WHERE p."systemId" = c."systemId" AND p.code = c.code) AS properties,
   (SELECT json_agg(h.parent ORDER BY h.parent)::text FROM terminology_hierarchy h
      WHERE h."systemId" = c."systemId" AND h.child = c.code) AS parents,
   (SELECT json_agg(h.child ORDER BY h.child)::text FROM terminology_hierarchy h
      WHERE h."systemId" = c."systemId" AND h.parent = c.code) AS children`;

/** One concept with everything $lookup returns, in one statement. */
export async function readConcept(db: Database, systemId: string, code: string): Promise<ConceptDetail | undefined> {
  const rows = await db.query<Row>(`SELECT ${CONCEPT_COLUMNS} FROM terminology_concept c WHERE c."systemId" = $1::uuid AND c.code = $2`, [
    systemId,
    code,
  ]);
  return rows[0] ? toDetail(rows[0]) : undefined;
}

interface SystemAndConceptRow extends Omit<Row, 'code'> {
  code: string | null;
  systemId: string;
  url: string;
  version: string;
  name: string | null;
  systemProperties: string | null;
  resourceId: string | null;
}

/**
 * The code system `url` as the caller sees it (their project first, then the shared scope) and
 * one of its concepts, in one statement: the $lookup hot path. Undefined when no such system is
 * indexed yet; `concept` undefined when the system has no such code.
 */
export async function readSystemAndConcept(
  db: Database,
  projectId: string,
  url: string,
  version: string | undefined,
  code: string,
): Promise<{ system: SystemRef; concept?: ConceptDetail } | undefined> {
  const args: unknown[] = [projectId, url, code];
  if (version !== undefined) args.push(version);
  const rows = await db.query<SystemAndConceptRow>(
    `WITH s AS (SELECT id, url, version, name, properties, "resourceId" FROM terminology_system
                WHERE "projectId" IN ($1, '') AND url = $2 ${version !== undefined ? 'AND version = $4' : ''}
                ORDER BY ("projectId" = '') ASC, "createdAt" DESC LIMIT 1)
     SELECT s.id::text AS "systemId", s.url, s.version, s.name, s.properties::text AS "systemProperties", s."resourceId", ${CONCEPT_COLUMNS}
     FROM s LEFT JOIN terminology_concept c ON c."systemId" = s.id AND c.code = $3`,
    args,
  );
  const row = rows[0];
  if (!row) return undefined;
  const system: SystemRef = {
    id: row.systemId,
    url: row.url,
    version: row.version,
    name: row.name,
    properties: row.systemProperties ? (JSON.parse(row.systemProperties) as SystemRef['properties']) : [],
    resourceId: row.resourceId,
  };
  return { system, concept: row.code === null ? undefined : toDetail(row as Row) };
}

function toDetail(row: Row): ConceptDetail {
  return {
    code: row.code,
    display: row.display,
    definition: row.definition,
    abstract: row.abstract,
    inactive: row.inactive,
    designations: parse(row.designations),
    properties: parse(row.properties),
    parents: parse(row.parents),
    children: parse(row.children),
  };
}

function parse<T>(text: string | null): T[] {
  return text ? (JSON.parse(text) as T[]) : [];
}
