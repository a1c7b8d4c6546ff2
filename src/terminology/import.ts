import { errors } from '../fhir/outcome.js';
import { type CodeSystem, type Coding, type ConceptMap, type ConceptMapEquivalence, type ConceptMapGroup } from '../fhir/resources.js';
import { asResourceOf, readTyped } from '../fhir/typed-resources.js';
import { requiredBindingCodes } from '../fhir/required-bindings.js';
import { ownOperationDefinition, type TypedValue } from '../operations/definition.js';
import type { Operation } from '../operations/registry.js';
import { findByUrl } from './resources.js';
import { terminologyChanged } from './cache.js';
import { rebuildClosure } from './indexing.js';
import { systemOfResource } from './systems.js';

/** Rows added by one $import beyond which the concept tables are re-analysed. */
const ANALYZE_AFTER_ROWS = 5000;

interface CodeSystemImportInput {
  system?: string;
  version?: string;
  concept: Coding[];
  property: { code: string; property: string; value: TypedValue }[];
  designation: { code: string; language?: string; value: string }[];
}

/** CodeSystem/$import: concepts, properties and designations into the concept tables, in one transaction. */
export const codeSystemImportOperation: Operation<CodeSystemImportInput, { return: CodeSystem }> = {
  definition: ownOperationDefinition('CodeSystem-import.json'),
  // The concept tables are written on the request's database, inside a transaction Bundle's.
  rollsBack: true,
  async handler(input, request) {
    let codeSystem: CodeSystem | undefined;
    if (request.level === 'instance') codeSystem = await readTyped(request.ctx.repo, 'CodeSystem', request.id!);
    else {
      if (input.system === undefined) throw errors.invalid('Give the CodeSystem by its url in "system"', 'Parameters.parameter');
      const url = input.version !== undefined ? `${input.system}|${input.version}` : input.system;
      codeSystem = await findByUrl(request.ctx, request.db, 'CodeSystem', url);
      if (!codeSystem) throw errors.notFound(`CodeSystem ${url} not found in this project`);
    }
    const system = await systemOfResource(request.db, codeSystem);
    for (const coding of input.concept) {
      if (coding.code === undefined) throw errors.invalid('Each concept needs a code', 'Parameters.parameter');
      if (coding.system !== undefined && coding.system !== system.url) {
        throw errors.invalid(`Concept ${coding.code} is of system ${coding.system}, not ${system.url}`, 'Parameters.parameter');
      }
    }
    const concepts = input.concept.map((c) => ({ code: c.code!, display: c.display ?? null }));
    const hierarchy = input.property
      .filter((p) => p.property === 'parent' || p.property === 'child')
      .map((p) => (p.property === 'parent' ? { parent: String(p.value.value), child: p.code } : { parent: p.code, child: String(p.value.value) }));
    const properties = input.property
      .filter((p) => p.property !== 'parent' && p.property !== 'child')
      .map((p) => ({
        code: p.code,
        property: p.property,
        type: p.value.type,
        value: typeof p.value.value === 'object' ? JSON.stringify(p.value.value) : String(p.value.value),
        flag: (p.property === 'notSelectable' || p.property === 'abstract') && p.value.value === true ? 'abstract'
          : (p.property === 'inactive' && p.value.value === true) || (p.property === 'status' && p.value.value === 'retired') ? 'inactive' : null,
      }));
    await request.db.transaction(async (tx) => {
      await terminologyChanged(tx);
      // Codes named by properties and designations must exist (given now or before).
      const named = [...new Set([...properties.map((p) => p.code), ...input.designation.map((d) => d.code)])];
      const missing = await tx.query<{ code: string }>(
        `SELECT x.code FROM unnest($2::text[]) AS x(code)
         WHERE NOT EXISTS (SELECT 1 FROM terminology_concept c WHERE c."systemId" = $1::uuid AND c.code = x.code)
           AND NOT x.code = ANY($3::text[]) LIMIT 5`,
        [system.id, named, concepts.map((c) => c.code)],
      );
      if (missing.length > 0) {
        throw errors.invalid(`Unknown code(s) ${missing.map((m) => `"${m.code}"`).join(', ')} in ${system.url}: add them as concepts first`, 'Parameters.parameter');
      }
      await tx.execute(
        `WITH base AS (SELECT COALESCE(max(seq), -1) AS top FROM terminology_concept WHERE "systemId" = $1::uuid)
         INSERT INTO terminology_concept ("systemId", code, seq, display)
         SELECT $1::uuid, x.code, base.top + (row_number() OVER ())::int, x.display
         FROM base, json_to_recordset($2::json) AS x(code text, display text)
         ON CONFLICT ("systemId", code) DO UPDATE SET display = COALESCE(EXCLUDED.display, terminology_concept.display)`,
        [system.id, JSON.stringify(concepts)],
      );
      await tx.execute(
        `WITH base AS (SELECT COALESCE(max(seq), -1) AS top FROM terminology_property WHERE "systemId" = $1::uuid),
           flags AS (UPDATE terminology_concept c SET abstract = c.abstract OR f.flag = 'abstract', inactive = c.inactive OR f.flag = 'inactive'
                     FROM json_to_recordset($2::json) AS f(code text, flag text)
                     WHERE c."systemId" = $1::uuid AND c.code = f.code AND f.flag IS NOT NULL),
           h AS (INSERT INTO terminology_hierarchy ("systemId", parent, child)
                 SELECT DISTINCT $1::uuid, parent, child FROM json_to_recordset($3::json) AS x(parent text, child text) ON CONFLICT DO NOTHING)
         INSERT INTO terminology_property ("systemId", code, seq, property, type, value)
         SELECT $1::uuid, x.code, base.top + (row_number() OVER ())::int, x.property, x.type, x.value
         FROM base, json_to_recordset($2::json) AS x(code text, property text, type text, value text)`,
        [system.id, JSON.stringify(properties), JSON.stringify(hierarchy)],
      );
      await tx.execute(
        `WITH base AS (SELECT COALESCE(max(seq), -1) AS top FROM terminology_designation WHERE "systemId" = $1::uuid)
         INSERT INTO terminology_designation ("systemId", code, seq, language, value)
         SELECT $1::uuid, x.code, base.top + (row_number() OVER ())::int, x.language, x.value
         FROM base, json_to_recordset($2::json) AS x(code text, language text, value text)`,
        [system.id, JSON.stringify(input.designation)],
      );
      if (hierarchy.length > 0 || concepts.length > 0) await rebuildClosure(tx, system.id);
    }, 'bulk');
    // Bulk loads change the tables' shape a lot: fresh statistics keep hierarchy queries on good plans.
    if (concepts.length + properties.length + hierarchy.length >= ANALYZE_AFTER_ROWS) {
      await request.db.execute('ANALYZE terminology_concept, terminology_property, terminology_hierarchy');
    }
    return { return: codeSystem };
  },
};

interface ConceptMapImportInput {
  url?: string;
  mapping: { source: Coding; target?: Coding; equivalence?: string }[];
}

const EQUIVALENCE_VALUE_SET = 'http://hl7.org/fhir/ValueSet/concept-map-equivalence';

/** A code of ConceptMap.group.element.target.equivalence (required binding), from the definitions. */
function isEquivalence(code: string): code is ConceptMapEquivalence {
  return requiredBindingCodes(EQUIVALENCE_VALUE_SET)?.includes(code) === true;
}

/** ConceptMap/$import: mappings appended to the ConceptMap's groups (one new version). */
export const conceptMapImportOperation: Operation<ConceptMapImportInput, { return: ConceptMap }> = {
  definition: ownOperationDefinition('ConceptMap-import.json'),
  rollsBack: true,
  async handler(input, request) {
    let map: ConceptMap | undefined;
    if (request.level === 'instance') map = await readTyped(request.ctx.repo, 'ConceptMap', request.id!);
    else {
      if (input.url === undefined) throw errors.invalid('Give the ConceptMap by its url', 'Parameters.parameter');
      map = await findByUrl(request.ctx, request.db, 'ConceptMap', input.url);
      if (!map) throw errors.notFound(`ConceptMap ${input.url} not found in this project`);
    }
    const groups: ConceptMapGroup[] = structuredClone(map.group ?? []);
    for (const [index, mapping] of input.mapping.entries()) {
      const { source, target } = mapping;
      if (!source.system || !source.code || (target && (!target.system || !target.code))) {
        throw errors.invalid(`Mapping ${index + 1} needs source (and target, when given) with system and code`, `Parameters.parameter[${index}]`);
      }
      let group = groups.find((g) => g.source === source.system && g.target === target?.system);
      if (!group) groups.push((group = { source: source.system, ...(target ? { target: target.system } : {}), element: [] }));
      group.element ??= [];
      let element = group.element.find((e) => e.code === source.code);
      if (!element) group.element.push((element = { code: source.code, ...(source.display ? { display: source.display } : {}) }));
      const equivalence = mapping.equivalence ?? (target ? 'equivalent' : 'unmatched');
      if (!isEquivalence(equivalence)) {
        throw errors.invalid(`Mapping ${index + 1}: "${equivalence}" is not an equivalence code (${EQUIVALENCE_VALUE_SET})`, `Parameters.parameter[${index}]`);
      }
      element.target ??= [];
      if (!element.target.some((t) => t.code === target?.code && t.equivalence === equivalence)) {
        element.target.push({ ...(target ? { code: target.code } : {}), ...(target?.display ? { display: target.display } : {}), equivalence });
      }
    }
    const { meta: _meta, ...rest } = map;
    const updated = await request.ctx.repo.updateResource('ConceptMap', map.id!, { ...rest, group: groups });
    return { return: asResourceOf(updated.resource, 'ConceptMap') };
  },
};
