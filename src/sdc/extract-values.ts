import { errors } from '../fhir/outcome.js';
import { isRecord, type Resource } from '../fhir/types.js';
import { answerValue, type Answer } from './answers.js';
import { pathIn, setAnswer, type Target } from './element-paths.js';
import { evaluateAll, type Variables } from './expressions.js';
import { listOf, SDC, type Json } from './questionnaire.js';

/**
 * `sdc-questionnaire-definitionExtractValue` (SDC definition-based extraction): a fixed value
 * (`fixed-value`) or the values of a FHIRPath expression (`expression`) written into the element
 * its `definition` names (`http://hl7.org/fhir/StructureDefinition/Observation#Observation.subject`)
 * of the resource being extracted, without an answer: on the Questionnaire always, on an item when
 * the response holds it. The expression sees the response item (`%resource` the response) and the
 * allocated ids, so `%patientId` can make one extracted resource refer to another.
 */

const EXTRACT_VALUE = `${SDC}sdc-questionnaire-definitionExtractValue`;

export function hasExtractValues(element: Json): boolean {
  return listOf(element.extension).some((extension) => extension.url === EXTRACT_VALUE);
}

/**
 * Writes `element`'s definitionExtractValues into `target` (or the resource it sits in); `where`
 * names the element in messages. `shared`: the element opens several resources, and a value
 * naming another one's element is left to that one.
 */
export function writeExtractValues(element: Json, scope: Json, response: Resource, variables: Variables, target: Target, shared = false): void {
  const where = typeof element.linkId === 'string' ? `item "${element.linkId}"` : 'the Questionnaire';
  const label = typeof element.linkId === 'string' ? element.linkId : 'Questionnaire';
  for (const extension of listOf(element.extension)) {
    if (extension.url !== EXTRACT_VALUE) continue;
    const parts = listOf(extension.extension);
    const definition = parts.find((part) => part.url === 'definition');
    const canonical = definition?.valueUri ?? definition?.valueCanonical ?? definition?.valueString;
    if (shared && !namesResourceOf(canonical, target)) continue;
    const [into, path] = placeOf(canonical, target, where);
    for (const answer of valuesOf(parts, where, scope, response, variables)) setAnswer(into, path, answer, label);
  }
}

/** Whether a definition names an element of the target's resource (its type, and its profile when it names one). */
function namesResourceOf(definition: unknown, target: Target): boolean {
  const resource = target.resource ?? target;
  return pathIn(definition, resource) !== undefined;
}

/** The target and relative path a definition names: below the current element, else below the resource. */
function placeOf(definition: unknown, target: Target, where: string): [Target, string] {
  const path = pathIn(definition, target);
  if (path) return [target, path];
  const resource = target.resource;
  const above = resource ? pathIn(definition, resource) : undefined;
  if (resource && above) return [resource, above];
  throw errors.invalid(
    `The definitionExtractValue of ${where} names ${JSON.stringify(definition)}, which is no element of the ${target.base} being extracted (a definition is <profile url>#<element id>)`,
    'Questionnaire.extension',
  );
}

function valuesOf(parts: Json[], where: string, scope: Json, response: Resource, variables: Variables): Answer[] {
  const fixed = parts.find((part) => part.url === 'fixed-value');
  const expression = parts.find((part) => part.url === 'expression')?.valueExpression;
  if (fixed && !expression) {
    const answer = answerValue(fixed);
    return answer ? [answer] : [];
  }
  if (!fixed && isRecord(expression) && typeof expression.expression === 'string') {
    if (expression.language !== undefined && expression.language !== 'text/fhirpath') {
      throw errors.invalid(`The definitionExtractValue of ${where} is in ${String(expression.language)}; only text/fhirpath is evaluated here`, 'Questionnaire.extension');
    }
    return evaluateAll(expression.expression, scope, response, variables, `The definitionExtractValue expression of ${where}`).map((value) => asAnswer(value, where));
  }
  throw errors.invalid(`The definitionExtractValue of ${where} needs either a fixed-value or an expression (valueExpression), not both`, 'Questionnaire.extension');
}

/** A FHIRPath result as an answer of the FHIR type it has (a string, a Coding, a Reference...). */
function asAnswer(value: unknown, where: string): Answer {
  switch (typeof value) {
    case 'string':
      return { type: 'string', value };
    case 'boolean':
      return { type: 'boolean', value };
    case 'number':
      return { type: Number.isInteger(value) ? 'integer' : 'decimal', value };
  }
  if (isRecord(value)) {
    if ('reference' in value) return { type: 'Reference', value };
    if ('coding' in value) return { type: 'CodeableConcept', value };
    if ('code' in value && ('system' in value || 'display' in value) && !('value' in value)) return { type: 'Coding', value };
    if ('value' in value) return { type: 'Quantity', value };
  }
  throw errors.invalid(`The definitionExtractValue expression of ${where} gives ${JSON.stringify(value)}, which is no value an element can take`, 'Questionnaire.extension');
}
