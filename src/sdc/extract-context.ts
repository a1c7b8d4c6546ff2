import { isResourceType, type ElementDefinition } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import { isRecord, type Resource } from '../fhir/types.js';
import { getTypeModel, type TypeModel } from '../validation/model.js';
import { shippedProfiles } from '../validation/profiles/library.js';
import { SnapshotError } from '../validation/profiles/snapshot.js';
import { compileProfile, type CompiledProfile, type ProfileNode } from '../validation/profiles/tree.js';
import type { Target } from './element-paths.js';
import { evaluateAll, type Variables } from './expressions.js';
import { listOf, SDC, type Json } from './questionnaire.js';

/**
 * The resource an extraction context opens (SDC definition-based extraction): a new one of the
 * type an itemExtractionContext's `valueCode` or a definitionExtract's `definition` names, or a
 * stored one, which the Bundle then updates: found by an itemExtractionContext's
 * `application/x-fhir-query`, or named by the Reference (or `Type/id`) its `text/fhirpath`
 * expression gives, evaluated on the response item (`%resource` the response).
 */

export const CONTEXT = `${SDC}sdc-questionnaire-itemExtractionContext`;
/** SDC 4's successor of itemExtractionContext: the resource's StructureDefinition (a core type or a profile). */
export const DEFINITION_EXTRACT = `${SDC}sdc-questionnaire-definitionExtract`;
const CORE_DEFINITION = 'http://hl7.org/fhir/StructureDefinition/';
const AT = 'Questionnaire.extension';

/** Finds the stored resources an `application/x-fhir-query` context names (`Patient?identifier=...`). */
export type ContextSearch = (query: string) => Promise<Resource[]>;

/** A resource being extracted, and the version it replaces when it updates a stored one. */
export interface Opened extends Target {
  readonly root: Json;
  readonly replaces?: { readonly id: string; readonly versionId: string };
  /** The profile a definitionExtract names, whose fixed and pattern values the resource takes (profile-values.ts). */
  readonly profile?: ProfileNode;
}

/** Where a context's expressions are evaluated. */
export interface ContextScope {
  readonly scope: Json;
  readonly response: Resource;
  readonly variables: Variables;
}

/** The resource the context opens; undefined when its FHIRPath names none (its items are then outside any context). */
export async function openContext(context: Json, where: string, find: ContextSearch, at: ContextScope): Promise<Opened | undefined> {
  if (context.url === DEFINITION_EXTRACT) return openDefinition(context, where, find);
  if (typeof context.valueCode === 'string') return newResource(context.valueCode, where);
  const expression = context.valueExpression as Json | undefined;
  if (expression?.language === 'text/fhirpath' && typeof expression.expression === 'string') return openNamed(expression.expression, where, find, at);
  if (expression?.language !== 'application/x-fhir-query' || typeof expression.expression !== 'string') {
    throw errors.invalid(`The itemExtractionContext of ${where} must be a valueCode naming a resource type, or an application/x-fhir-query or text/fhirpath valueExpression`, AT);
  }
  const query = expression.expression;
  const type = query.split('?')[0];
  const found = await find(query);
  if (found.length > 1) throw errors.invalid(`The itemExtractionContext query "${query}" of ${where} finds ${found.length} resources: it must name at most one`, AT);
  return found.length === 0 ? newResource(type, where) : stored(found[0], where);
}

/** The stored resource a FHIRPath context names (`%resource.subject`: a Reference, or `Type/id`); a new one of that type when the project has none by that id. */
async function openNamed(expression: string, where: string, find: ContextSearch, { scope, response, variables }: ContextScope): Promise<Opened | undefined> {
  const first = evaluateAll(expression, scope, response, variables, `The itemExtractionContext of ${where}`)[0];
  if (first === undefined) return undefined;
  const reference = isRecord(first) ? first.reference : first;
  const match = typeof reference === 'string' ? /^([A-Z][A-Za-z]+)\/([A-Za-z0-9\-.]{1,64})$/.exec(reference) : null;
  if (!match) throw errors.invalid(`The itemExtractionContext of ${where} gives ${JSON.stringify(first)}; it must give a Reference or Type/id`, AT);
  const [, type, id] = match;
  modelOf(type, where);
  const [found] = await find(`${type}?_id=${encodeURIComponent(id)}`);
  return found ? stored(found, where) : newResource(type, where);
}

function stored(resource: Resource, where: string): Opened {
  const existing = structuredClone(resource) as Json;
  const type = String(existing.resourceType);
  const replaces = { id: String(existing.id), versionId: String((existing.meta as Json | undefined)?.versionId ?? '') };
  return { base: type, obj: existing, root: existing, model: modelOf(type, where), replaces };
}

/**
 * A new resource of the type a definitionExtract's `definition` names: a core type by its
 * StructureDefinition url, or a profile the project holds or the server ships (its `type`,
 * `meta.profile`, and its fixed and pattern values once the answers are in).
 */
async function openDefinition(context: Json, where: string, find: ContextSearch): Promise<Opened> {
  const canonical = definitionOf(context);
  if (canonical === undefined) throw errors.invalid(`The definitionExtract of ${where} needs a definition (valueCanonical)`, AT);
  const url = canonical.split('|')[0];
  if (url.startsWith(CORE_DEFINITION) && isResourceType(url.slice(CORE_DEFINITION.length))) return newResource(url.slice(CORE_DEFINITION.length), where);
  const [stored] = await find(`StructureDefinition?url=${encodeURIComponent(url)}`);
  const profile = profileOf(stored, canonical);
  if (!profile) throw errors.invalid(`The definitionExtract of ${where} names ${canonical}, which is no core resource type nor a profile this project holds`, AT);
  const opened = newResource(profile.type, where);
  opened.root.meta = { profile: [canonical] };
  return { ...opened, definition: url, profile: profile.root };
}

/** A definitionExtract's `definition` canonical. */
export function definitionOf(context: Json): string | undefined {
  const canonical = listOf(context.extension).find((part) => part.url === 'definition')?.valueCanonical;
  return typeof canonical === 'string' ? canonical : undefined;
}

/** The profile a project holds (with the snapshot its write generated), else one the server ships. */
function profileOf(stored: Resource | undefined, canonical: string): CompiledProfile | undefined {
  const elements = (stored?.snapshot as { element?: ElementDefinition[] } | undefined)?.element;
  if (stored && typeof stored.type === 'string' && elements?.length) {
    try {
      return compileProfile(String(stored.url), stored.type, elements);
    } catch (error) {
      if (!(error instanceof SnapshotError)) throw error;
    }
  }
  const shipped = shippedProfiles().compiled(canonical);
  return shipped && isResourceType(shipped.type) ? shipped : undefined;
}

function newResource(type: string, where: string): Opened {
  const root: Json = { resourceType: type };
  return { base: type, obj: root, root, model: modelOf(type, where) };
}

function modelOf(type: string, where: string): TypeModel {
  const model = isResourceType(type) ? getTypeModel(type) : undefined;
  if (!model) throw errors.invalid(`The itemExtractionContext of ${where} names "${type}", which is not a resource type`, AT);
  return model;
}
