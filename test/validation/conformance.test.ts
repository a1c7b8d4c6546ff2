import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isResourceType } from '../../src/fhir/definitions.js';
import { R4_EXAMPLES } from '../helpers/fixtures.js';
import { validationIssues } from './helpers.js';

/**
 * Examples that are not valid R4, each with why, and the issues they must produce: asserting the
 * failure keeps the exception honest if the validator or the file changes.
 */
const KNOWN_INVALID: Record<string, { reason: string; code: string; expression: RegExp }> = {
  // A Questionnaire despite its name. Questionnaire.item.linkId is 1..1 in R4, but its nested
  // "display" items (fly-over help texts) have no linkId.
  'bundle-questionnaire.json': {
    reason: 'nested display items without the required Questionnaire.item.linkId',
    code: 'required',
    expression: /^Questionnaire(\.item\[\d+\])+\.linkId$/,
  },
  // Two concepts share the code "chol-mass" (the first one's display says mmol/L: it was meant
  // to be "chol-mmol"), which csd-1 forbids.
  'codesystem-example.json': {
    reason: 'two concepts with the code chol-mass, against csd-1 (codes SHALL be unique)',
    code: 'invariant',
    expression: /^CodeSystem$/,
  },
};

function readExample(file: string): unknown {
  return JSON.parse(readFileSync(new URL(file, R4_EXAMPLES), 'utf8'));
}

/** The published FHIR R4 examples (HL7 fhir-test-cases) must pass, except the few that break R4 itself. */
const files = readdirSync(R4_EXAMPLES)
  .filter((file) => file.endsWith('.json'))
  .filter((file) => {
    const resourceType = (readExample(file) as { resourceType?: unknown }).resourceType;
    return typeof resourceType === 'string' && isResourceType(resourceType);
  })
  .sort();

describe('FHIR R4 examples', () => {
  it('finds the examples', () => {
    expect(files.length).toBeGreaterThan(50);
    for (const file of Object.keys(KNOWN_INVALID)) expect(files).toContain(file);
  });

  it.each(files.filter((file) => !(file in KNOWN_INVALID)))('%s is valid', (file) => {
    expect(validationIssues(readExample(file))).toEqual([]);
  });

  const knownInvalid = Object.entries(KNOWN_INVALID).map(([file, expected]) => [file, expected.reason, expected] as const);
  it.each(knownInvalid)('%s is invalid: %s', (file, _reason, expected) => {
    const issues = validationIssues(readExample(file));
    expect(issues.length).toBeGreaterThan(0);
    for (const found of issues) {
      expect(found.code).toBe(expected.code);
      expect(found.expression?.[0]).toMatch(expected.expression);
    }
  });
});
