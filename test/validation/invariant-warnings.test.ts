import { describe, expect, it } from 'vitest';
import { collectValidationIssues, validateResource } from '../../src/validation/index.js';

/** Invariants of severity warning: reported by collectValidationIssues when asked, never thrown. */

const patientWithoutNarrative = { resourceType: 'Patient', name: [{ family: 'Chalmers' }] };

describe('invariant warnings', () => {
  it('are reported with severity warning when asked for', () => {
    expect(collectValidationIssues(patientWithoutNarrative, { warnings: true })).toEqual([
      {
        severity: 'warning',
        code: 'invariant',
        details: { text: 'dom-6: A resource should have narrative for robust management' },
        expression: ['Patient'],
      },
    ]);
  });

  it('are left out by default', () => {
    expect(collectValidationIssues(patientWithoutNarrative)).toEqual([]);
  });

  it('never make validateResource throw', () => {
    expect(() => validateResource(patientWithoutNarrative)).not.toThrow();
  });

  it('come after the errors of the same resource, each with its severity', () => {
    const issues = collectValidationIssues(
      { resourceType: 'Observation', status: 'final', code: { text: 'x' }, valueString: 'a', dataAbsentReason: { text: 'b' } },
      { warnings: true },
    );
    expect(issues.map((found) => [found.severity, found.details?.text?.split(':')[0]])).toEqual([
      ['error', 'obs-6'],
      ['warning', 'dom-6'],
    ]);
  });
});
