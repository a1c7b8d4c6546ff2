import type { Json } from './questionnaire.js';

/**
 * A QuestionnaireResponse answer (`value[x]`) turned into the value of an element of another type,
 * as SDC extraction must (a `valueCoding` answer into a `code` or a CodeableConcept, a decimal
 * into a Quantity...). Only conversions that keep the answer's meaning are made.
 */

export interface Answer {
  /** The answer's type: 'Coding', 'decimal', 'string'... */
  readonly type: string;
  readonly value: unknown;
}

/** The answer's value[x], or undefined for an answer without one. */
export function answerValue(answer: Json): Answer | undefined {
  for (const [key, value] of Object.entries(answer)) {
    if (!key.startsWith('value') || value === undefined) continue;
    const suffix = key.slice('value'.length);
    const primitive = suffix[0].toLowerCase() + suffix.slice(1);
    return { type: PRIMITIVES.has(primitive) ? primitive : suffix, value };
  }
  return undefined;
}

// Answers take the first eight; a definitionExtractValue's fixed-value may be any of them.
const PRIMITIVES = new Set(['boolean', 'decimal', 'integer', 'date', 'dateTime', 'time', 'string', 'uri', 'code', 'markdown', 'id', 'url', 'canonical', 'instant', 'positiveInt', 'unsignedInt']);
const STRING_TYPES = new Set(['string', 'markdown', 'uri', 'url', 'canonical', 'id', 'oid', 'uuid']);
const INTEGER_TYPES = new Set(['integer', 'positiveInt', 'unsignedInt']);

/** The answer as a value of FHIR type `target`, or undefined when it cannot be one. */
export function convertAnswer(answer: Answer, target: string): unknown {
  const { type, value } = answer;
  if (type === target) return value;
  const coding = type === 'Coding' ? (value as Json) : undefined;
  if (target === 'code') return coding ? coding.code : type === 'string' ? value : undefined;
  if (STRING_TYPES.has(target)) return STRING_TYPES.has(type) || type === 'code' ? value : coding && target === 'string' ? (coding.display ?? coding.code) : undefined;
  if (INTEGER_TYPES.has(target)) return INTEGER_TYPES.has(type) ? value : undefined;
  switch (target) {
    case 'decimal':
      return type === 'integer' ? value : undefined;
    case 'date':
      return type === 'dateTime' && typeof value === 'string' ? value.slice(0, 10) : undefined;
    case 'dateTime':
      return type === 'date' ? value : undefined;
    case 'instant':
      return type === 'dateTime' && typeof value === 'string' && value.length > 10 ? value : undefined;
    case 'CodeableConcept':
      return coding ? { coding: [coding], ...(typeof coding.display === 'string' ? { text: coding.display } : {}) } : type === 'string' ? { text: value } : undefined;
    case 'Quantity':
      return type === 'decimal' || type === 'integer' ? { value } : undefined;
    case 'Reference':
      // A reference given as text: `Patient/123`, or the `urn:uuid:` an extractAllocateId made.
      return type === 'string' || type === 'uri' ? { reference: value } : undefined;
    default:
      return undefined;
  }
}

/**
 * The types an answer may become for a choice element (`value[x]`), best first: the answer's own
 * type, then its usual FHIR counterpart (a Coding as a CodeableConcept, a decimal as a Quantity).
 */
export function choiceCandidates(answer: Answer): string[] {
  const preferred: Record<string, string[]> = {
    Coding: ['CodeableConcept', 'Coding', 'code', 'string'],
    decimal: ['Quantity', 'decimal'],
    integer: ['integer', 'Quantity', 'decimal'],
    date: ['date', 'dateTime'],
    dateTime: ['dateTime', 'date', 'instant'],
    string: ['string', 'CodeableConcept', 'markdown'],
  };
  return preferred[answer.type] ?? [answer.type];
}

/**
 * An answer as an Observation's value[x] (SDC observation-based extraction): R4 Observation takes
 * no decimal, uri or Coding, so those become a Quantity, a string and a CodeableConcept.
 */
export function observationValue(answer: Answer): [string, unknown] | undefined {
  switch (answer.type) {
    case 'Coding':
      return ['valueCodeableConcept', convertAnswer(answer, 'CodeableConcept')];
    case 'decimal':
      return ['valueQuantity', { value: answer.value }];
    case 'date':
      return ['valueDateTime', answer.value];
    case 'uri':
      return ['valueString', answer.value];
    case 'boolean':
    case 'integer':
    case 'dateTime':
    case 'time':
    case 'string':
    case 'Quantity':
      return [`value${answer.type[0].toUpperCase()}${answer.type.slice(1)}`, answer.value];
    default:
      return undefined;
  }
}
