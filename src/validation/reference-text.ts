import { ID_SOURCE } from '../fhir/ids.js';

/**
 * The text of a Reference.reference that names a resource of this server (a relative reference)
 * must be `Type/id` or `Type/id/_history/version` (R4 references.html#literal). Anything else
 * relative (`Patient/../x`, `Patient//x`, `Patient/`, an id of other characters) names no resource:
 * stored, it would be indexed as a URL no search finds, and resolved against the base it would
 * leave the resource's type. An absolute URL under this server's own FHIR base names a resource
 * here just the same, so what follows the base is held to the same rule. Other absolute URLs (another
 * server's paths are its own business), `#id` of a contained resource, `urn:uuid:`/`urn:oid:`
 * (a transaction's placeholders) and conditional references (`Patient?identifier=..`, resolved by
 * a transaction) are other forms and are left alone, as are an AccessPolicy's references holding
 * Medplum's variables (`%patient`, `Patient/%profile.id`), filled in for each member it applies to.
 */

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:/;
const CONDITIONAL = /^[A-Z][A-Za-z]*\?/;
const RELATIVE = new RegExp(`^[A-Z][A-Za-z]*/(${ID_SOURCE})(?:/_history/(${ID_SOURCE}))?$`);
/** Ids the id pattern admits but a URL path reads as "this" or "up". */
const DOT_SEGMENT = /^\.\.?$/;

const IDS = 'each id 1-64 letters, digits, "-" or "." (but not "." or "..")';
const EXPECTED =
  `a relative reference is Type/id or Type/id/_history/version, ${IDS}; ` +
  'otherwise use an absolute URL, "#id" of a contained resource or urn:uuid:';

/**
 * Why `reference`, in a resource of type `root`, names no resource; undefined when its form is one
 * FHIR allows. `fhirBase` is this server's FHIR base (absolute URLs under it are checked too).
 */
export function referenceTextProblem(reference: string, root: string, fhirBase?: string): string | undefined {
  if (root === 'AccessPolicy' && reference.includes('%')) return undefined;
  if (fhirBase && reference.startsWith(`${fhirBase}/`)) {
    const local = reference.slice(fhirBase.length + 1);
    if (CONDITIONAL.test(local) || namesResource(local)) return undefined;
    return `a reference to this server is ${fhirBase}/Type/id or ${fhirBase}/Type/id/_history/version, ${IDS}`;
  }
  if (reference.startsWith('#') || SCHEME.test(reference) || CONDITIONAL.test(reference)) return undefined;
  return namesResource(reference) ? undefined : EXPECTED;
}

function namesResource(relative: string): boolean {
  const match = RELATIVE.exec(relative);
  return match !== null && !DOT_SEGMENT.test(match[1]) && !(match[2] !== undefined && DOT_SEGMENT.test(match[2]));
}
