import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { compileFastPath } from '../../src/indexing/fast-path.js';
import { compileFhirPath } from '../../src/indexing/fhirpath-eval.js';
import { getIndexPlan, splitUnion, termAppliesTo } from '../../src/indexing/plan.js';
import { FHIR_TEST_CASES_R4 } from '../helpers/fixtures.js';

function read(path: string): string {
  return readFileSync(fileURLToPath(new URL(path, FHIR_TEST_CASES_R4)), 'utf8');
}

function evaluate(expression: string, resource: { resourceType: string }): unknown[] {
  const evaluator = compileFastPath(expression, resource.resourceType);
  if (!evaluator) throw new Error(`not supported: ${expression}`);
  return evaluator(resource).map((item) => item.value);
}

describe('fast path', () => {
  const observation = {
    resourceType: 'Observation',
    subject: { reference: 'Patient/p1' },
    performer: [{ reference: 'Practitioner/d1' }, { reference: 'https://x.org/fhir/Patient/p2/_history/1' }],
    valueQuantity: { value: 5, unit: 'mg' },
    effectiveDateTime: '2024-01-01',
    component: [{ valueString: 'a' }, { valueQuantity: { value: 1 } }],
  };

  it('reads choice elements through their typed property', () => {
    expect(evaluate('Observation.value', observation)).toEqual([{ value: 5, unit: 'mg' }]);
    expect(evaluate('(Observation.effective as dateTime)', observation)).toEqual(['2024-01-01']);
    expect(evaluate('Observation.effective.as(Period)', observation)).toEqual([]);
  });

  it('reports the FHIR type of each value', () => {
    const evaluator = compileFastPath('Observation.component.value | Observation.subject', 'Observation')!;
    expect(evaluator(observation).map((item) => item.type)).toEqual(['string', 'Quantity', 'Reference']);
  });

  it('filters several values with as, where fhirpath.js would refuse', () => {
    expect(evaluate('(Observation.component.value as Quantity)', observation)).toEqual([{ value: 1 }]);
    expect(evaluate('Observation.component.value.ofType(string)', observation)).toEqual(['a']);
  });

  it('treats resolve() is Type as the type the reference names, local or absolute', () => {
    expect(evaluate('Observation.subject.where(resolve() is Patient)', observation)).toEqual([observation.subject]);
    expect(evaluate('Observation.performer.where(resolve() is Patient)', observation)).toEqual([
      observation.performer[1],
    ]);
    expect(evaluate('Observation.performer.where(resolve() is Practitioner)', observation)).toEqual([
      observation.performer[0],
    ]);
  });

  it('agrees with fhirpath.js (and its stand-in resolve()) on resolve() is Type', () => {
    const expression = 'Observation.performer.where(resolve() is Patient)';
    expect(compileFhirPath(expression)!(observation).map((item) => item.value)).toEqual(
      evaluate(expression, observation),
    );
  });

  it('evaluates where(field = literal), unions and parentheses', () => {
    const patient = {
      resourceType: 'Patient',
      telecom: [
        { system: 'phone', value: '1' },
        { system: 'email', value: 'a@b' },
      ],
    };
    expect(evaluate("Patient.telecom.where(system='email').value", patient)).toEqual(['a@b']);
    expect(evaluate("(Patient.telecom.where(system = 'phone') | Patient.telecom.where(system='email')).value", patient)).toEqual(['1', 'a@b']);
  });

  it('leaves everything else to fhirpath.js', () => {
    for (const expression of [
      'Patient.deceased.exists() and Patient.deceased != false',
      "iif(priority = 'stat', 50, 10)",
      'Bundle.entry[0].resource',
      'ProjectMembership.profile.resolve().resourceType',
      "Patient.extension('http://example.org/ext').value",
      "Patient.name.where(use = 'official' or use = 'usual')",
      'Patient.name.given.first()',
    ]) {
      expect(compileFastPath(expression, 'Patient'), expression).toBeUndefined();
    }
  });
});

describe('X.exists() and X != false', () => {
  const deceased = 'Patient.deceased.exists() and Patient.deceased != false';

  it('is compiled without fhirpath.js: every Patient term is on the fast path', () => {
    const slow = getIndexPlan('Patient').flatMap((param) => param.terms.filter((term) => term.engine !== 'fast').map((term) => term.expression));
    expect(slow).toEqual([]);
  });

  it('answers as fhirpath.js does', () => {
    const fast = getIndexPlan('Patient').find((param) => param.code === 'deceased')!.terms[0].evaluate;
    const slow = compileFhirPath(deceased, true)!;
    for (const values of [
      {},
      { deceasedBoolean: true },
      { deceasedBoolean: false },
      { deceasedBoolean: null },
      { deceasedDateTime: '2020' },
      { deceasedDateTime: '2024-03-05T10:00:00+02:00' },
      { deceasedBoolean: 'false' },
      { deceasedBoolean: [false] },
      { deceasedBoolean: [true, false] },
      { deceasedInteger: 3 },
    ]) {
      const patient = { resourceType: 'Patient', ...values };
      expect(fast(patient), JSON.stringify(values)).toEqual(slow(patient));
    }
  });
});

describe('union terms', () => {
  it('splits at top-level | only', () => {
    expect(splitUnion("A.b | (C.d | C.e).f | G.h.where(x = 'a|b')")).toEqual(['A.b', '(C.d | C.e).f', "G.h.where(x = 'a|b')"]);
  });

  it('keeps the terms that start at the resource type, Resource, or no type', () => {
    expect(termAppliesTo('Patient.name', 'Patient')).toBe(true);
    expect(termAppliesTo('(Observation.value as Quantity)', 'Patient')).toBe(false);
    expect(termAppliesTo('Resource.meta.tag', 'Patient')).toBe(true);
    expect(termAppliesTo("iif(priority = 'stat', 50, 10)", 'Task')).toBe(true);
  });
});

/** The HL7 FHIRPath suite, restricted to the expressions the fast path claims. */
describe('HL7 FHIRPath test suite (fast path)', () => {
  const INPUTS: Record<string, string> = {
    'patient-example.xml': 'examples/patient-example.json',
    'observation-example.xml': 'examples/observation-example.json',
    'questionnaire-example.xml': 'examples/questionnaire-example.json',
  };
  const decode = (text: string) =>
    text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');

  interface SuiteCase {
    name: string;
    input: { resourceType: string };
    expression: string;
    outputs: { type: string; value: string }[];
  }

  const cases: SuiteCase[] = [];
  for (const match of read('fhirpath/tests-fhir-r4.xml').matchAll(/<test\b([^>]*)>([\s\S]*?)<\/test>/g)) {
    const attributes = Object.fromEntries([...match[1].matchAll(/(\w+)="([^"]*)"/g)].map((a) => [a[1], a[2]]));
    const expression = /<expression([^>]*)>([\s\S]*?)<\/expression>/.exec(match[2]);
    const inputFile = INPUTS[attributes.inputfile];
    // Predicate tests turn the result into a boolean; invalid ones expect errors a lenient evaluator does not raise.
    if (!expression || !inputFile || attributes.predicate === 'true' || /invalid=/.test(expression[1])) continue;
    const input = JSON.parse(read(inputFile)) as { resourceType: string };
    const text = decode(expression[2]);
    if (!compileFastPath(text, input.resourceType)) continue;
    const outputs = [...match[2].matchAll(/<output type="(\w+)">([\s\S]*?)<\/output>/g)].map((o) => ({
      type: o[1],
      value: decode(o[2]).replace(/^@/, ''),
    }));
    cases.push({ name: attributes.name, input, expression: text, outputs });
  }

  it('claims a fair share of the plain-path cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(15);
  });

  it.each(cases)('$name: $expression', ({ input, expression, outputs }) => {
    const results = compileFastPath(expression, input.resourceType)!(input);
    expect(results.map((item) => ({ type: item.type, value: String(item.value) }))).toEqual(outputs);
  });
});
