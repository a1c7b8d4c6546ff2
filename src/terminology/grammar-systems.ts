import { createRequire } from 'node:module';
import { isRecord, type Resource } from '../fhir/types.js';

/**
 * Code systems defined by a grammar rather than a list, which no concept table can hold: a value
 * set that includes the whole of one (no concept list, no filter) is checked by the system's own
 * parser. UCUM is checked by `@lhncbc/ucum-lhc` (the NLM's UCUM library, which fhirpath also
 * uses for quantities); the FHIR R4 UCUM code system Flint ships lists 312 common units only, so
 * membership in it would refuse valid units such as mg/dL.
 */

const UCUM = 'http://unitsofmeasure.org';

interface UcumUtils {
  validateUnitString(unit: string, suggest?: boolean): { status: 'valid' | 'invalid' | 'error' };
}

let ucum: UcumUtils | undefined;

/** Loaded on first use: its unit tables take a moment and some memory that most servers never need. */
function ucumUtils(): UcumUtils {
  ucum ??= (createRequire(import.meta.url)('@lhncbc/ucum-lhc') as { UcumLhcUtils: { getInstance(): UcumUtils } }).UcumLhcUtils.getInstance();
  return ucum;
}

const grammars: Record<string, (code: string) => boolean> = {
  [UCUM]: (code) => ucumUtils().validateUnitString(code, false).status === 'valid',
};

/** The parser that decides membership of `system|code` in `valueSet`, when the value set includes the whole grammar-defined system. */
export function grammarCheck(valueSet: Resource, system: string): ((code: string) => boolean) | undefined {
  const check = grammars[system];
  if (!check) return undefined;
  const includes = isRecord(valueSet.compose) && Array.isArray(valueSet.compose.include) ? (valueSet.compose.include as unknown[]) : [];
  const whole = includes.some((include) => isRecord(include) && include.system === system && !include.concept && !include.filter && !include.valueSet);
  return whole ? check : undefined;
}
