import { errors } from '../fhir/outcome.js';
import { isRecord } from '../fhir/types.js';

/** Most columns one `_fields` may ask for. */
export const MAX_FIELDS = 100;

/** `_fields=a,b.c`: dotted paths of element names, one column each. */
export function parseFields(value: string | null): string[][] {
  if (value === null || value.trim() === '') throw errors.invalid('$csv needs _fields: the comma-separated element paths of its columns, such as _fields=id,name.family', '_fields');
  const fields = value.split(',').map((field) => field.trim());
  if (fields.length > MAX_FIELDS) throw errors.invalid(`_fields names ${fields.length} columns, more than the ${MAX_FIELDS} allowed`, '_fields');
  return fields.map((field) => {
    const steps = field.split('.');
    if (steps.some((step) => !/^[A-Za-z][A-Za-z0-9_]*$/.test(step))) {
      throw errors.invalid(`_fields: "${field}" is not a path of element names joined by dots (such as name.family)`, '_fields');
    }
    return steps;
  });
}

/**
 * A column's cell: every value the path reaches (arrays at any step are walked), each as text,
 * joined with "; " when there are several.
 */
export function cellOf(resource: Record<string, unknown>, path: readonly string[]): string {
  let values: unknown[] = [resource];
  for (const step of path) {
    values = values.flatMap((value) => (isRecord(value) && step in value ? [value[step]].flat() : []));
  }
  return values.map(valueText).filter((text) => text !== '').join('; ');
}

/** A value as a spreadsheet reader expects it: primitives as they are, common data types by their readable part. */
function valueText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'object') return String(value);
  if (!isRecord(value)) return JSON.stringify(value);
  if (typeof value.text === 'string') return value.text;
  if (typeof value.display === 'string') return value.display;
  if (typeof value.reference === 'string') return value.reference;
  if (Array.isArray(value.coding)) return value.coding.map(valueText).filter((text) => text !== '').join(', ');
  if (typeof value.code === 'string') return value.code;
  if (value.family !== undefined || value.given !== undefined) return [...[value.given ?? []].flat(), value.family].filter((part) => typeof part === 'string').join(' ');
  if (typeof value.value === 'string' || typeof value.value === 'number') return [value.value, value.unit].filter((part) => part !== undefined).join(' ');
  return JSON.stringify(value);
}
