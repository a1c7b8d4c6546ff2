import { createRequire } from 'node:module';
import { OperationOutcomeError, issue, outcome } from '../fhir/outcome.js';
import { isRecord, type BundleEntry, type Resource } from '../fhir/types.js';
import { listOf } from './questionnaire.js';

/**
 * Template-based extraction (SDC "Form Data Extraction", template-based: resources contained in
 * the Questionnaire, filled by `sdc-questionnaire-templateExtract*` FHIRPath expressions), by
 * CSIRO's `@aehrc/sdc-template-extract`, the reference implementation behind Smart Forms.
 *
 * The library is loaded through `require` on first use: its ES module build imports a directory
 * (`fhirpath/fhir-context/r4`), which Node's ES module loader refuses; its CommonJS build loads.
 * Its types come from `@types/fhir`, which it does not depend on, so the little of it used here
 * is typed below.
 */

interface LibraryResult {
  extractedBundle: { entry?: BundleEntry[] };
  issues: unknown;
}

interface TemplateExtractLibrary {
  canBeTemplateExtracted(questionnaire: unknown): boolean;
  inAppExtract(response: unknown, questionnaire: unknown, comparison: null): Promise<{ extractSuccess: boolean; extractResult: LibraryResult | Resource }>;
}

let library: TemplateExtractLibrary | undefined;

function load(): TemplateExtractLibrary {
  library ??= createRequire(import.meta.url)('@aehrc/sdc-template-extract') as TemplateExtractLibrary;
  return library;
}

/** Whether the Questionnaire (or an item) names a template to extract with. */
export function hasTemplates(questionnaire: Resource): boolean {
  return load().canBeTemplateExtracted(questionnaire);
}

/**
 * The transaction entries the Questionnaire's templates make from the response. A failure, and a
 * result with issues (a template expression that does not evaluate leaves its element out and
 * reports it), is 400 with the library's issues: the template is the client's to fix.
 */
export async function templateEntries(response: Resource, questionnaire: Resource): Promise<BundleEntry[]> {
  // The library may change what it is given.
  const { extractSuccess, extractResult } = await load().inAppExtract(structuredClone(response), structuredClone(questionnaire), null);
  if (!extractSuccess || !isResult(extractResult)) throw refusal(isResult(extractResult) ? { resourceType: 'OperationOutcome' } : extractResult);
  if (isRecord(extractResult.issues) && listOf(extractResult.issues.issue).length > 0) throw refusal(extractResult.issues as Resource);
  return extractResult.extractedBundle.entry ?? [];
}

function isResult(result: LibraryResult | Resource): result is LibraryResult {
  return isRecord(result.extractedBundle);
}

function refusal(result: Resource): OperationOutcomeError {
  const found = listOf(result.issue);
  const texts = found.map((entry) => (isRecord(entry.details) && typeof entry.details.text === 'string' ? entry.details.text : entry.diagnostics)).filter((text) => typeof text === 'string');
  const issues = (texts.length > 0 ? texts : ['the template could not be applied']).map((text) => issue('invalid', `Template-based extraction failed: ${String(text)}`, 'Questionnaire.contained'));
  return new OperationOutcomeError(outcome(issues), 400);
}
