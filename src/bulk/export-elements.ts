import { isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import { applySubsetting } from '../fhir/summary.js';
import type { Resource } from '../fhir/types.js';

/**
 * `_elements` of an export (Bulk Data Access IG 2.0): root elements, `name` for every type or
 * `Type.name` for one. A type that some listed element applies to is written with those elements
 * and its mandatory ones, marked SUBSETTED, as a search's `_elements` does (the same code); a type
 * no listed element applies to is written whole, so `_elements=Patient.name` narrows only Patients.
 * Answers undefined without `_elements`: the export then copies the stored text unparsed.
 */
export type ElementsTransform = (type: string, text: string) => string;

export function parseExportElements(values: readonly string[] | undefined): ElementsTransform | undefined {
  const names = (values ?? []).flatMap((value) => value.split(',')).map((name) => name.trim()).filter((name) => name !== '');
  if (names.length === 0) return undefined;
  const everyType: string[] = [];
  const byType = new Map<string, string[]>();
  for (const name of names) {
    const parts = name.split('.');
    const typed = parts.length === 2 && isResourceType(parts[0]);
    if (parts.length > 2 || (parts.length === 2 && !typed) || !/^[A-Za-z][A-Za-z0-9]*$/.test(parts[parts.length - 1])) {
      throw errors.invalid(`_elements names "${name}": use a root element, name or Type.name (e.g. Patient.name)`, '_elements');
    }
    if (typed) byType.set(parts[0], [...(byType.get(parts[0]) ?? []), parts[1]]);
    else everyType.push(name);
  }
  const listFor = (type: string): string => [...everyType, ...(byType.get(type) ?? [])].join(',');
  return (type, text) => {
    const list = listFor(type);
    if (list === '') return text;
    return JSON.stringify(applySubsetting(JSON.parse(text) as Resource, undefined, list));
  };
}
