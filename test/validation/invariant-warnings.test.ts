import { describe, expect, it } from 'vitest';
import { collectValidationIssues, validateResource } from '../../src/validation/index.js';

/** Invariants of severity warning: reported by collectValidationIssues when asked, never thrown. */

/** que-0 (a warning): the name should be usable as an identifier, starting with a capital. */
const questionnaireWithLowerCaseName = { resourceType: 'Questionnaire', status: 'draft', name: 'intake form' };

describe('invariant warnings', () => {
  it('are reported with severity warning when asked for', () => {
    expect(collectValidationIssues(questionnaireWithLowerCaseName, { warnings: true })).toEqual([
      {
        severity: 'warning',
        code: 'invariant',
        details: { text: 'que-0: Name should be usable as an identifier for the module by machine processing applications such as code generation' },
        expression: ['Questionnaire'],
      },
    ]);
  });

  it('are left out by default', () => {
    expect(collectValidationIssues(questionnaireWithLowerCaseName)).toEqual([]);
  });

  it('never make validateResource throw', () => {
    expect(() => validateResource(questionnaireWithLowerCaseName)).not.toThrow();
  });

  it('come with the errors of the same resource, each with its severity', () => {
    const issues = collectValidationIssues({ ...questionnaireWithLowerCaseName, item: [{ linkId: '1', type: 'display', required: true }] }, { warnings: true });
    expect(issues.map((found) => [found.severity, found.details?.text?.split(':')[0]])).toEqual([
      ['error', 'que-6'],
      ['warning', 'que-0'],
    ]);
  });

  it('leave out dom-6 (no narrative), which every resource without one would carry', () => {
    expect(collectValidationIssues({ resourceType: 'Patient' }, { warnings: true })).toEqual([]);
  });
});
