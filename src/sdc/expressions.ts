import { randomUUID } from 'node:crypto';
import fhirpath from 'fhirpath';
import r4Model from 'fhirpath/fhir-context/r4';
import { errors } from '../fhir/outcome.js';
import type { Resource } from '../fhir/types.js';
import { listOf, SDC, type Json } from './questionnaire.js';

/**
 * The FHIRPath expressions of definition-based extraction and the variables they see: `%resource`
 * (the QuestionnaireResponse) and the ids `sdc-questionnaire-extractAllocateId` allocates (SDC:
 * a new `urn:uuid:` per variable name, once for the Questionnaire's, once per repetition of an
 * item for an item's, seen by the expressions of that item and the items below it), so that one
 * extracted resource's `fullUrl` and another's reference to it agree.
 */

export type Variables = Readonly<Record<string, string>>;

const ALLOCATE_ID = `${SDC}sdc-questionnaire-extractAllocateId`;

/** `variables` with a new `urn:uuid:` for each extractAllocateId of `element` (the Questionnaire or an item). */
export function withAllocatedIds(element: Json, variables: Variables): Variables {
  let allocated: Record<string, string> | undefined;
  for (const extension of listOf(element.extension)) {
    if (extension.url !== ALLOCATE_ID) continue;
    const name = extension.valueString;
    if (typeof name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw errors.invalid(`An extractAllocateId must name a variable (valueString, letters, digits and _), not ${JSON.stringify(name)}`, 'Questionnaire.extension');
    }
    allocated ??= { ...variables };
    allocated[name] = `urn:uuid:${randomUUID()}`;
  }
  return allocated ?? variables;
}

/** Every value of `expression` evaluated on `scope` (a response item, or the response). Not FHIRPath: 400 naming `what`. */
export function evaluateAll(expression: string, scope: Json, response: Resource, variables: Variables, what: string): unknown[] {
  try {
    return fhirpath.evaluate(scope, expression, { ...variables, resource: response }, r4Model) as unknown[];
  } catch (error) {
    throw errors.invalid(`${what} "${expression}" is not valid FHIRPath: ${(error as Error).message}`, 'Questionnaire.extension');
  }
}
