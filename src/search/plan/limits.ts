import { errors, issue, outcome, OperationOutcomeError } from '../../fhir/outcome.js';
import { splitOr } from '../query/values.js';
import type { SearchLimits } from '../search-services.js';
import { CONTROL } from './control.js';

/**
 * The sizes a search may have, checked before its parameters are resolved, compiled or sent to
 * the database: the work of each step grows with the number of parameters and the length of their
 * values, and a search is one request that must not stall the others (docs/search.md#limits).
 */
export function checkSearchSize(params: readonly [string, string][], limits: SearchLimits): void {
  if (params.length > limits.searchMaxParameters) {
    throw errors.tooCostly(
      `A search takes at most ${limits.searchMaxParameters} parameters; this one has ${params.length}. Narrow it, or split it into several searches`,
      params[limits.searchMaxParameters][0],
    );
  }
  // Only filters' values count: result control (`_count`, `_sort`...) is bounded by the parameter count.
  let values = 0;
  for (const [name, value] of params) {
    checkName(name, limits);
    const budget = CONTROL.has(name) ? limits.searchMaxOrValues : limits.searchMaxOrValues - values;
    const given = checkValue(name, value, limits, budget);
    if (!CONTROL.has(name)) values += given;
  }
}

function checkName(name: string, limits: SearchLimits): void {
  if (name.length > limits.searchMaxValueLength) {
    throw tooLong(`A search parameter name is ${name.length} characters long; names are at most ${limits.searchMaxValueLength}`, name.slice(0, 64));
  }
  if (name.includes('\0')) throw errors.invalid('A search parameter name holds a NUL character (U+0000)', name.replace(/\0/g, '\\0'));
}

/** The number of OR values of a parameter, once each is checked; `budget` is how many the search has left. */
function checkValue(name: string, value: string, limits: SearchLimits, budget: number): number {
  const max = limits.searchMaxValueLength;
  // Every value within both limits takes at most this much, commas between them included: a
  // longer one is refused without splitting it.
  if (value.length > budget * (max + 1)) {
    throw tooLong(`The value of ${name} is ${value.length} characters long: a search takes at most ${limits.searchMaxOrValues} values of at most ${max} characters`, name);
  }
  if (value.includes('\0')) throw errors.invalid(`The value of ${name} holds a NUL character (U+0000)`, name);
  const alternatives = value.length <= max && !value.includes(',') ? [value] : splitOr(value);
  if (alternatives.length > budget) {
    throw errors.tooCostly(`A search takes at most ${limits.searchMaxOrValues} values (each OR value of each filter counts); ${name} goes beyond`, name);
  }
  const long = alternatives.find((alternative) => alternative.length > max);
  if (long !== undefined) {
    throw tooLong(`A value of ${name} is ${long.length} characters long; search values are at most ${max}`, name);
  }
  return alternatives.length;
}

function tooLong(text: string, expression: string): OperationOutcomeError {
  return new OperationOutcomeError(outcome([issue('too-long', text, expression)]), 400);
}

