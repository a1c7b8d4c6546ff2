import { errors } from '../fhir/outcome.js';
import type { CodeableConcept, Coding, ConceptMapEquivalence, ConceptMapGroup } from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';
import { coreOperationDefinition } from '../operations/definition.js';
import type { Operation, OperationRequest } from '../operations/registry.js';
import { shippedConceptMap, shippedConceptMaps } from '../fhir/terminology-catalogue.js';
import { findByUrl } from './resources.js';

interface TranslateInput {
  url?: string;
  conceptMap?: Resource;
  code?: string;
  system?: string;
  coding?: Coding;
  codeableConcept?: CodeableConcept;
  source?: string;
  target?: string;
  targetsystem?: string;
  reverse?: boolean;
}

interface Match {
  equivalence: ConceptMapEquivalence;
  concept?: Coding;
  source: string;
}

const NO_MATCH: ReadonlySet<ConceptMapEquivalence> = new Set(['unmatched', 'disjoint']);
/** ConceptMaps of a project scanned when no map is named. */
const MAX_MAPS = 1000;

/**
 * ConceptMap/$translate (R4): from the named map (url, instance or inline), or every map of the
 * project, and every FHIR R4 concept map shipped with the server, whose source/target value sets
 * fit. A project's map hides a shipped one of the same url. `reverse=true` maps targets back to
 * sources.
 */
export const translateOperation: Operation<TranslateInput, { result: boolean; message?: string; match: Match[] }> = {
  definition: coreOperationDefinition('ConceptMap-translate'),
  async handler(input, request) {
    const codings = input.coding ? [input.coding] : input.codeableConcept ? (input.codeableConcept.coding ?? []) : [];
    if (input.code !== undefined) {
      if (input.system === undefined) throw errors.invalid('$translate needs system together with code', 'Parameters.parameter');
      codings.push({ system: input.system, code: input.code });
    }
    if (codings.length === 0) throw errors.invalid('$translate needs code and system, coding or codeableConcept', 'Parameters.parameter');
    const maps = await mapsFor(input, request);
    const matches: Match[] = [];
    for (const map of maps) {
      const mapUrl = String(map.url ?? `ConceptMap/${map.id}`);
      // An inline map is not validated: only its `group` being a list is checked.
      for (const group of (Array.isArray(map.group) ? map.group : []) as ConceptMapGroup[]) {
        for (const coding of codings) {
          if (input.reverse) matches.push(...reverseMatches(group, coding, input, mapUrl));
          else matches.push(...forwardMatches(group, coding, input, mapUrl));
        }
      }
    }
    const result = matches.some((m) => !NO_MATCH.has(m.equivalence));
    const what = codings.map((c) => `${c.system}|${c.code}`).join(', ');
    return { result, ...(result ? {} : { message: `No mapping found for ${what}` }), match: matches };
  },
};

function forwardMatches(group: ConceptMapGroup, coding: Coding, input: TranslateInput, source: string): Match[] {
  if (coding.system !== undefined && group.source !== undefined && group.source !== coding.system) return [];
  if (input.targetsystem !== undefined && group.target !== input.targetsystem) return [];
  const out: Match[] = [];
  for (const element of group.element ?? []) {
    if (element.code !== coding.code) continue;
    for (const target of element.target ?? []) {
      const equivalence = target.equivalence ?? 'equivalent';
      const concept: Coding = clean({ system: group.target, version: group.targetVersion, code: target.code, display: target.display });
      out.push(target.code !== undefined ? { equivalence, concept, source } : { equivalence, source });
    }
  }
  return out;
}

function reverseMatches(group: ConceptMapGroup, coding: Coding, input: TranslateInput, source: string): Match[] {
  if (coding.system !== undefined && group.target !== undefined && group.target !== coding.system) return [];
  if (input.targetsystem !== undefined && group.source !== input.targetsystem) return [];
  const out: Match[] = [];
  for (const element of group.element ?? []) {
    for (const target of element.target ?? []) {
      if (target.code !== coding.code) continue;
      out.push({
        equivalence: reverseEquivalence(target.equivalence ?? 'equivalent'),
        concept: clean({ system: group.source, version: group.sourceVersion, code: element.code, display: element.display }),
        source,
      });
    }
  }
  return out;
}

const REVERSED: Partial<Record<ConceptMapEquivalence, ConceptMapEquivalence>> = {
  wider: 'narrower',
  narrower: 'wider',
  subsumes: 'specializes',
  specializes: 'subsumes',
};

/** Read backwards, a wider target is a narrower source. */
function reverseEquivalence(equivalence: ConceptMapEquivalence): ConceptMapEquivalence {
  return REVERSED[equivalence] ?? equivalence;
}

async function mapsFor(input: TranslateInput, request: OperationRequest): Promise<Resource[]> {
  if (request.level === 'instance') return [await request.ctx.repo.readResource('ConceptMap', request.id!)];
  if (input.conceptMap) return [input.conceptMap];
  if (input.url !== undefined) {
    const map = (await findByUrl(request.ctx, request.db, 'ConceptMap', input.url)) ?? shippedMap(input.url);
    if (!map) throw errors.invalid(`ConceptMap ${input.url} not found`, 'Parameters.parameter');
    return [map];
  }
  const rows = await request.db.query<{ content: string }>(
    `SELECT content::text AS content FROM resource WHERE "projectId" = $1 AND "resourceType" = 'ConceptMap' AND NOT deleted
     ORDER BY "lastUpdated" DESC LIMIT ${MAX_MAPS}`,
    [request.ctx.identity.projectId],
  );
  const [sourceKey, targetKey] = input.reverse ? ['target', 'source'] : ['source', 'target'];
  const own = rows.map((row) => JSON.parse(row.content) as Resource);
  const ownUrls = new Set(own.map((map) => map.url));
  return [...own, ...shippedConceptMaps().filter((map) => !ownUrls.has(map.url))]
    .filter((map) => input.source === undefined || canonicalOf(map, sourceKey) === input.source)
    .filter((map) => input.target === undefined || canonicalOf(map, targetKey) === input.target);
}

/** A shipped concept map by url (`|version` must be the shipped one's version). */
function shippedMap(url: string): Resource | undefined {
  const [base, version] = url.split('|');
  const map = shippedConceptMap(base);
  return map && (version === undefined || map.version === version) ? map : undefined;
}

function canonicalOf(map: Resource, side: string): unknown {
  return map[`${side}Uri`] ?? map[`${side}Canonical`];
}

function clean<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
