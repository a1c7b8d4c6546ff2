import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create } from '../search-api/helpers.js';
import { constraintOn } from '../profiles/helpers.js';

/**
 * `$extract`, definition-based, with several definitionExtracts on one item (a resource each, the
 * answers going to the one their definition names) and the fixed and pattern values of the
 * profile a definitionExtract names copied into the extracted resource.
 */

const api = await useTestServer();

type Json = any;
const SDC = 'http://hl7.org/fhir/uv/sdc/StructureDefinition/';
const SD = 'http://hl7.org/fhir/StructureDefinition/';
const definitionExtract = (canonical: string) => ({ url: `${SDC}sdc-questionnaire-definitionExtract`, extension: [{ url: 'definition', valueCanonical: canonical }] });
const extractValue = (definition: string, valueString: string) => ({
  url: `${SDC}sdc-questionnaire-definitionExtractValue`,
  extension: [{ url: 'definition', valueUri: definition }, { url: 'fixed-value', valueString }],
});

async function extract(p: ProjectClient, questionnaire: Json, response: Json) {
  const url = `http://example.org/Questionnaire/${randomUUID()}`;
  await create(p, { resourceType: 'Questionnaire', status: 'active', ...questionnaire, url });
  return p.post('/QuestionnaireResponse/$extract', { resourceType: 'QuestionnaireResponse', status: 'completed', ...response, questionnaire: url });
}

const resources = (bundle: Json, type: string): Json[] => (bundle.entry ?? []).map((e: Json) => e.resource).filter((r: Json) => r.resourceType === type);

async function storeProfile(p: ProjectClient, type: string, elements: Record<string, unknown>[]): Promise<string> {
  const url = `https://example.org/fhir/StructureDefinition/extract-${randomUUID()}`;
  await create(p, constraintOn(type, url, elements));
  return url;
}

const answer = (linkId: string, valueString: string) => ({ linkId, answer: [{ valueString }] });

describe('$extract, several definitionExtracts on one item', () => {
  it('opens one resource per definitionExtract, each taking the answers its items name', async () => {
    const p = api.newProject();
    const res = await extract(
      p,
      {
        item: [
          {
            linkId: 'contact',
            type: 'group',
            extension: [definitionExtract(`${SD}Patient`), definitionExtract(`${SD}RelatedPerson`)],
            item: [
              { linkId: 'patient-name', type: 'string', definition: `${SD}Patient#Patient.name.family` },
              { linkId: 'carer-name', type: 'string', definition: `${SD}RelatedPerson#RelatedPerson.name.family` },
            ],
          },
        ],
      },
      { item: [{ linkId: 'contact', item: [answer('patient-name', 'Lee'), answer('carer-name', 'Okafor')] }] },
    );
    expect(res.status, res.text).toBe(200);
    expect(resources(res.body, 'Patient').map((r) => r.name)).toEqual([[{ family: 'Lee' }]]);
    expect(resources(res.body, 'RelatedPerson').map((r) => r.name)).toEqual([[{ family: 'Okafor' }]]);
  });

  it('sends the answers to the profile their definition names when both resources are of one type', async () => {
    const p = api.newProject();
    const [first, second] = [await storeProfile(p, 'Observation', []), await storeProfile(p, 'Observation', [])];
    const res = await extract(
      p,
      {
        extension: [definitionExtract(first), definitionExtract(second), extractValue(`${second}#Observation.status`, 'preliminary')],
        item: [
          { linkId: 'a', type: 'string', definition: `${first}#Observation.code.text` },
          { linkId: 'b', type: 'string', definition: `${second}#Observation.code.text` },
        ],
      },
      { item: [answer('a', 'height'), answer('b', 'weight')] },
    );
    expect(res.status, res.text).toBe(200);
    const extracted = resources(res.body, 'Observation').map((r) => ({ profile: r.meta.profile[0], code: r.code, status: r.status }));
    expect(extracted).toEqual([
      { profile: first, code: { text: 'height' }, status: undefined },
      { profile: second, code: { text: 'weight' }, status: 'preliminary' },
    ]);
  });
});

describe("$extract, the profile's fixed and pattern values", () => {
  it('copies fixed and pattern values of a project profile, required slices included, keeping the answers', async () => {
    const p = api.newProject();
    const profile = await storeProfile(p, 'Observation', [
      { id: 'Observation.status', path: 'Observation.status', fixedCode: 'final' },
      { id: 'Observation.category', path: 'Observation.category', slicing: { discriminator: [{ type: 'pattern', path: '$this' }], rules: 'open' } },
      { id: 'Observation.category:survey', path: 'Observation.category', sliceName: 'survey', min: 1, max: '1', patternCodeableConcept: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'survey' }] } },
      { id: 'Observation.code', path: 'Observation.code', patternCodeableConcept: { coding: [{ system: 'http://loinc.org', code: '72166-2' }] } },
    ]);
    const res = await extract(p, { extension: [definitionExtract(profile)], item: [{ linkId: 'note', type: 'string', definition: `${profile}#Observation.valueString` }] }, { item: [answer('note', 'never smoked')] });
    expect(res.status, res.text).toBe(200);
    const [observation] = resources(res.body, 'Observation');
    expect(observation).toMatchObject({
      status: 'final',
      category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'survey' }] }],
      code: { coding: [{ system: 'http://loinc.org', code: '72166-2' }] },
      valueString: 'never smoked',
    });
  });

  it('leaves an answered element as answered', async () => {
    const p = api.newProject();
    const profile = await storeProfile(p, 'Observation', [
      { id: 'Observation.code', path: 'Observation.code', patternCodeableConcept: { coding: [{ system: 'http://loinc.org', code: '72166-2' }] } },
    ]);
    const res = await extract(p, { extension: [definitionExtract(profile)], item: [{ linkId: 'code', type: 'string', definition: `${profile}#Observation.code.text` }] }, { item: [answer('code', 'smoking')] });
    expect(res.status, res.text).toBe(200);
    expect(resources(res.body, 'Observation')[0].code).toEqual({ text: 'smoking' });
  });

  it("fills a shipped profile's required codings (bodyweight's category and code)", async () => {
    const p = api.newProject();
    const res = await extract(
      p,
      { extension: [definitionExtract(`${SD}bodyweight`)], item: [{ linkId: 'when', type: 'dateTime', definition: `${SD}bodyweight#Observation.effective[x]` }] },
      { item: [{ linkId: 'when', answer: [{ valueDateTime: '2026-11-01T10:00:00Z' }] }] },
    );
    expect(res.status, res.text).toBe(200);
    const [observation] = resources(res.body, 'Observation');
    expect(observation.category).toEqual([{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] }]);
    expect(observation.code.coding).toEqual([{ system: 'http://loinc.org', code: '29463-7' }]);
    expect(observation.effectiveDateTime).toBe('2026-11-01T10:00:00Z');
  });
});
