import type { Resource } from '../../src/fhir/types.js';
import type { IndexRows } from '../../src/indexing/row-types.js';
import { buildIndexRows } from '../../src/indexing/indexer.js';

/** The rows of one table for one parameter code. */
export function rowsOf<T extends keyof IndexRows>(resource: Resource, table: T, code: string): IndexRows[T] {
  return buildIndexRows(resource)[table].filter((row) => row.code === code) as IndexRows[T];
}

export const patient = (fields: Record<string, unknown>): Resource => ({ resourceType: 'Patient', id: 'p1', ...fields });

export const observation = (fields: Record<string, unknown>): Resource => ({
  resourceType: 'Observation',
  id: 'o1',
  status: 'final',
  code: { text: 'x' },
  ...fields,
});
