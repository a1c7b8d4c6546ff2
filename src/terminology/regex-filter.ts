import type { SqlExecutor } from '../db/database.js';
import { errors, type OperationOutcomeError } from '../fhir/outcome.js';
import { isRecord, type Resource } from '../fhir/types.js';
import { isInvalidRegularExpression } from '../storage/db-errors.js';
import type { ComposeElement } from './types.js';

/**
 * ValueSet filters with `op: regex` are evaluated by the database (PostgreSQL's regular
 * expressions), so the database is the one that says whether a pattern compiles: on write, where
 * the client can correct it, and again where a ValueSet written before that check is expanded.
 */

/** The condition that `subject` matches the regex `pattern` whole, as FHIR's regex filter means. */
export function regexCondition(subject: string, pattern: string): string {
  return `${subject} ~ ('^(?:' || ${pattern} || ')$')`;
}

/** Refuses (400, naming the filter's value) a ValueSet with a regex filter the database cannot compile. */
export async function checkRegexFilters(db: SqlExecutor, valueSet: Resource): Promise<void> {
  for (const { path, value } of regexFilters(valueSet)) {
    try {
      await db.query(`SELECT ${regexCondition("''", '$1')} AS matches`, [value]);
    } catch (error) {
      if (!isInvalidRegularExpression(error)) throw error;
      throw errors.invalid(`${path} "${value}" is not a regular expression this server can compile (${messageOf(error)})`, path);
    }
  }
}

/** The 400 of a concept query that failed on a regex filter of `elements` that does not compile; undefined for any other failure. */
export function badRegexFilter(error: unknown, elements: readonly ComposeElement[]): OperationOutcomeError | undefined {
  if (!isInvalidRegularExpression(error)) return undefined;
  const patterns = elements.flatMap((element) => element.filter ?? []).filter((f) => f.op === 'regex').map((f) => `"${f.value}"`);
  return errors.invalid(`A regex filter of the value set does not compile (${patterns.join(', ')}): ${messageOf(error)}`);
}

function regexFilters(valueSet: Resource): { path: string; value: string }[] {
  const compose = isRecord(valueSet.compose) ? valueSet.compose : {};
  return (['include', 'exclude'] as const).flatMap((part) => {
    const elements = Array.isArray(compose[part]) ? (compose[part] as unknown[]) : [];
    return elements.flatMap((element, i) => {
      const filters = isRecord(element) && Array.isArray(element.filter) ? (element.filter as unknown[]) : [];
      return filters.flatMap((filter, j) =>
        isRecord(filter) && filter.op === 'regex' && typeof filter.value === 'string'
          ? [{ path: `ValueSet.compose.${part}[${i}].filter[${j}].value`, value: filter.value }]
          : [],
      );
    });
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message.replace(/^.*?(invalid regular expression)/i, '$1') : 'invalid regular expression';
}
