import type { Resource } from '../fhir/types.js';
import { evaluateAll, type Variables } from './expressions.js';
import { listOf, type Json } from './questionnaire.js';

/** What a definitionExtract's expressions set on its transaction entry: the fullUrl and conditions of the request. */
export interface EntryRequest {
  fullUrl?: string;
  ifNoneMatch?: string;
  ifModifiedSince?: string;
  ifMatch?: string;
  ifNoneExist?: string;
}

const PARTS = ['fullUrl', 'ifNoneMatch', 'ifModifiedSince', 'ifMatch', 'ifNoneExist'] as const;

/**
 * The definitionExtract's `fullUrl`, `ifNoneMatch`, `ifModifiedSince`, `ifMatch` and `ifNoneExist`
 * sub-extensions: FHIRPath expressions (valueString) evaluated on the response item the extension
 * sits on (the response itself for the Questionnaire's), with `%resource` the response and the
 * allocated ids as variables. An expression that gives nothing leaves its part out.
 */
export function entryRequestOf(context: Json, scope: Json, response: Resource, variables: Variables): EntryRequest {
  const request: EntryRequest = {};
  for (const part of listOf(context.extension)) {
    const name = PARTS.find((candidate) => candidate === part.url);
    if (!name || typeof part.valueString !== 'string') continue;
    const value = evaluate(part.valueString, scope, response, variables, name);
    if (value !== undefined) request[name] = value;
  }
  return request;
}

function evaluate(expression: string, scope: Json, response: Resource, variables: Variables, name: string): string | undefined {
  const first = evaluateAll(expression, scope, response, variables, `The definitionExtract's ${name}`)[0];
  return first === undefined || first === null ? undefined : String(first);
}
