import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { UNCHECKED, WRONG } from '../../src/validation/invariants/catalog.js';
import { collectValidationIssues } from '../../src/validation/index.js';

/** The invariants Flint does not evaluate are the ones docs/validation.md lists, and are really skipped. */

const docs = readFileSync(new URL('../../docs/validation.md', import.meta.url), 'utf8');

/** A MedicationRequest whose dispense request expects a supply of `duration`. */
function medicationRequestFor(duration: Record<string, unknown>): Record<string, unknown> {
  return {
    resourceType: 'MedicationRequest',
    status: 'active',
    intent: 'order',
    medicationCodeableConcept: { text: 'Amoxicillin' },
    subject: { reference: 'Patient/p1' },
    dispenseRequest: { expectedSupplyDuration: duration },
  };
}

function keyOf(id: string): string {
  return id.slice(0, id.indexOf('@'));
}

describe('unchecked and wrong invariants', () => {
  it.each([...UNCHECKED.keys(), ...WRONG.keys()])('%s is listed in docs/validation.md', (id) => {
    expect(docs).toContain(`| \`${keyOf(id)}\` | ${id.slice(id.indexOf('@') + 1)} |`);
  });

  it('does not apply drt-1, wrong in R4: a Duration with a UCUM code and no value is accepted', () => {
    const resource = medicationRequestFor({ system: 'http://unitsofmeasure.org', code: 'd' });
    expect(collectValidationIssues(resource)).toEqual([]);
  });

  it('still checks the other invariants of the same type: a Duration with a code and no system breaks qty-3', () => {
    const resource = medicationRequestFor({ value: 10, code: 'd' });
    expect(collectValidationIssues(resource).map((found) => found.details?.text?.split(':')[0])).toEqual(['qty-3']);
  });
});
