import { getStructureDefinition } from '../../fhir/definitions.js';
import { isRecord } from '../../fhir/types.js';
import { evaluateInvariant } from './evaluate.js';

/**
 * The invariants that hold on every element or resource, checked in TypeScript on the values the
 * validator's walk visits (their FHIRPath would run on every node of every write). Each function
 * answers for one node; scope.ts decides where they apply.
 */

/** Where each native invariant is declared, to read its human text from the definitions. */
const DECLARED_AT: Readonly<Record<string, string>> = {
  'ele-1': 'Element',
  'ext-1': 'Extension',
  'dom-2': 'DomainResource',
  'dom-3': 'DomainResource',
  'dom-4': 'DomainResource',
  'dom-5': 'DomainResource',
  'dom-6': 'DomainResource',
  'txt-1': 'Narrative.div',
  'txt-2': 'Narrative.div',
  'ref-1': 'Reference',
};

const humanTexts = new Map<string, string>();

/** "ele-1: All FHIR elements must have a @value or children", as the definitions word it. */
export function nativeText(key: string): string {
  let text = humanTexts.get(key);
  if (text === undefined) {
    const path = DECLARED_AT[key] ?? '';
    const type = path.split('.')[0] ?? '';
    const element = getStructureDefinition(type)?.snapshot?.element.find((candidate) => candidate.path === path);
    const human = element?.constraint?.find((constraint) => constraint.key === key)?.human;
    text = `${key}: ${human ?? key}`;
    humanTexts.set(key, text);
  }
  return text;
}

/** ele-1 on an object: a value or a child other than id (an empty object is a structure error already). */
export function hasContentBesidesId(value: Record<string, unknown>): boolean {
  for (const key in value) if (key !== 'id') return true;
  return false;
}

/** ext-1: an extension has nested extensions or a value, never both, never neither. */
export function extensionIsWellFormed(value: Record<string, unknown>): boolean {
  const hasExtensions = value.extension !== undefined;
  let hasValue = false;
  for (const key in value) {
    if (key.startsWith('value') || key.startsWith('_value')) {
      hasValue = true;
      break;
    }
  }
  return hasExtensions !== hasValue;
}

/**
 * txt-1 and txt-2 in R4 are both `htmlChecks()`, which fhirpath.js implements as the narrative
 * rules say (well-formed XHTML, only the allowed elements and attributes, no active content,
 * some non-whitespace content). This tells the two apart: no text and no image is txt-2,
 * anything else htmlChecks() refuses is txt-1.
 */
export function narrativeProblem(div: string): 'txt-1' | 'txt-2' | undefined {
  const verdict = evaluateInvariant('txt-1', 'htmlChecks()', 'xhtml', div, { resource: undefined, rootResource: undefined });
  if (verdict !== false) return undefined;
  return hasVisibleContent(div) ? 'txt-1' : 'txt-2';
}

function hasVisibleContent(div: string): boolean {
  if (/<img[\s/>]/i.test(div)) return true;
  return div.replace(/<[^>]*>/g, '').trim() !== '';
}

/** dom-2, dom-4, dom-5 for one contained resource: the keys it breaks. */
export function containedProblems(contained: Record<string, unknown>): string[] {
  const keys: string[] = [];
  if (contained.contained !== undefined) keys.push('dom-2');
  const meta = isRecord(contained.meta) ? contained.meta : undefined;
  if (meta && (meta.versionId !== undefined || meta.lastUpdated !== undefined)) keys.push('dom-4');
  if (meta?.security !== undefined) keys.push('dom-5');
  return keys;
}
