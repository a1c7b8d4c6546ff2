import { getStructureDefinition, type ElementDefinition } from '../../fhir/definitions.js';

/**
 * The invariants (ElementDefinition.constraint) of the base R4 definitions, by element path, read
 * lazily per type from its snapshot. The ones every element carries, and the ones the FHIRPath
 * engine cannot evaluate or that are wrong in R4, are kept out: see NATIVE, UNCHECKED and WRONG.
 */

export type InvariantSeverity = 'error' | 'warning';

export interface Invariant {
  readonly key: string;
  readonly severity: InvariantSeverity;
  readonly human: string;
  readonly expression: string;
}

/**
 * Checked in TypeScript during the validator's walk (native.ts), never through FHIRPath: they hold
 * on every element or resource, so evaluating them per node would dominate the cost.
 */
export const NATIVE: ReadonlySet<string> = new Set([
  'ele-1', 'ext-1', 'dom-2', 'dom-3', 'dom-4', 'dom-5', 'dom-6', 'txt-1', 'txt-2', 'ref-1',
]);

/**
 * Keys never evaluated, each with why. Keys are not unique across definitions (inv-1 names three
 * different rules), so an entry names the element path it applies to.
 */
export const UNCHECKED: ReadonlyMap<string, string> = new Map([
  [
    'eld-16@ElementDefinition',
    "its regex escapes '@' and fhirpath.js compiles regexes in Unicode mode, where that escape is a syntax error",
  ],
  [
    'eld-19@ElementDefinition',
    "its regex escapes a quote and fhirpath.js compiles regexes in Unicode mode, where that escape is a syntax error",
  ],
  [
    'sdf-14@StructureDefinition',
    'a differential without element ids (written before R4 made them required) is accepted: the ' +
      'snapshot generated on write derives them (docs/validation.md, Profiles)',
  ],
  [
    'sdf-17@StructureDefinition',
    'the differential ids it compares are derived on write when missing, as for sdf-14',
  ],
  [
    'dom-6@DomainResource',
    '(a warning) every resource without narrative would carry it in $validate; Medplum does not report it either',
  ],
  [
    'eld-20@ElementDefinition',
    "(a warning) its regex has a lone ']', a syntax error in the Unicode mode fhirpath.js compiles regexes in",
  ],
]);

/**
 * Core R4 invariants whose expression is known to be wrong so that it refuses valid data, by
 * `key@path`, with the reason. The list of faulty core expressions is HL7/fhir pull request 4122;
 * the others it names either do not exist in R4 or only let invalid data through.
 */
export const WRONG: ReadonlyMap<string, string> = new Map([
  [
    'drt-1@Duration',
    'over-strict: it requires a value whenever a code is present, which its human text does not ' +
      '("There SHALL be a code if there is a value ... If system is present, it SHALL be UCUM")',
  ],
]);

/** Invariants of one definition by element path; '' key never used. */
type Catalog = ReadonlyMap<string, readonly Invariant[]>;

const catalogs = new Map<string, Catalog>();

/** The invariants declared on element `path` (e.g. 'Patient.contact', or 'Quantity' for the type itself). */
export function invariantsAt(path: string): readonly Invariant[] {
  const dot = path.indexOf('.');
  const type = dot < 0 ? path : path.slice(0, dot);
  let catalog = catalogs.get(type);
  if (catalog === undefined) {
    catalog = buildCatalog(getStructureDefinition(type)?.snapshot?.element ?? []);
    catalogs.set(type, catalog);
  }
  return catalog.get(path) ?? [];
}

function buildCatalog(elements: readonly ElementDefinition[]): Catalog {
  const catalog = new Map<string, Invariant[]>();
  for (const element of elements) {
    const found = invariantsOf(element);
    if (found.length > 0) catalog.set(element.path, found);
  }
  return catalog;
}

/** The evaluable invariants of one snapshot element (profiles call this with their own elements). */
export function invariantsOf(element: ElementDefinition): Invariant[] {
  const found: Invariant[] = [];
  for (const constraint of element.constraint ?? []) {
    const { key, severity, human, expression } = constraint;
    if (!key || !expression || (severity !== 'error' && severity !== 'warning')) continue;
    if (NATIVE.has(key) || isSkipped(key, element.path)) continue;
    found.push({ key, severity, human: human ?? key, expression });
  }
  return found;
}

export function isSkipped(key: string, path: string): boolean {
  const id = `${key}@${path}`;
  return UNCHECKED.has(id) || WRONG.has(id);
}
