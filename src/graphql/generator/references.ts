import { getSearchParametersFor, type SearchParameter } from '../../fhir/definitions.js';
import { enumOfCodes, type EnumModel } from './enums.js';
import { compare } from './model.js';

/**
 * Reverse references: `Patient.ObservationList(_reference: subject)` lists the Observations whose
 * reference search parameter `subject` points at that Patient. For every resource type S with
 * reference search parameters, `enum SReferenceParam` lists them; every type T that one of them can
 * point at gets a field `SList(_reference: SReferenceParam!, ...)`.
 */

export function referenceParamEnumName(source: string): string {
  return `${source}ReferenceParam`;
}

function referenceParameters(source: string): SearchParameter[] {
  return getSearchParametersFor(source)
    .filter((sp) => sp.type === 'reference')
    .sort((a, b) => compare(a.code, b.code));
}

/** `enum SReferenceParam` for every resource type with reference search parameters. */
export function referenceParamEnums(resourceTypes: readonly string[]): EnumModel[] {
  const enums: EnumModel[] = [];
  for (const source of resourceTypes) {
    const codes = referenceParameters(source).map((sp) => sp.code);
    const text = `The reference search parameters of ${source}, for reverse reference fields (\`${source}List(_reference: ...)\`).`;
    const model = enumOfCodes(referenceParamEnumName(source), codes, text);
    if (model) enums.push(model);
  }
  return enums;
}

/**
 * target type → the source types whose reference search parameters can point at it, sorted.
 * A parameter without `target` (or targeting only abstract types) adds nothing.
 */
export function reverseReferenceSources(resourceTypes: readonly string[]): Map<string, string[]> {
  const known = new Set(resourceTypes);
  const sources = new Map<string, Set<string>>();
  for (const source of resourceTypes) {
    for (const sp of referenceParameters(source)) {
      for (const target of sp.target ?? []) {
        // null: a target without a value (only an extension in `_target`) points at no type.
        if (target === null || !known.has(target)) continue;
        let set = sources.get(target);
        if (!set) sources.set(target, (set = new Set()));
        set.add(source);
      }
    }
  }
  return new Map([...sources].map(([target, set]) => [target, [...set].sort(compare)]));
}
