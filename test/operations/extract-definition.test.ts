import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';
import { create } from '../search-api/helpers.js';

/**
 * `$extract`, definition-based: ids allocated by `extractAllocateId` that tie extracted resources
 * together, `definitionExtractValue`, and updates of stored resources (an id in the answers, a
 * FHIRPath itemExtractionContext naming a stored resource).
 */

const api = await useTestServer();

type Json = any;
const SDC = 'http://hl7.org/fhir/uv/sdc/StructureDefinition/';
const SD = 'http://hl7.org/fhir/StructureDefinition/';
const ref = (reference: string) => ({ reference });
const allocateId = (name: string) => ({ url: `${SDC}sdc-questionnaire-extractAllocateId`, valueString: name });
const context = (extension: Json) => ({ url: `${SDC}sdc-questionnaire-itemExtractionContext`, ...extension });
const definitionExtract = (canonical: string, fullUrl?: string) => ({
  url: `${SDC}sdc-questionnaire-definitionExtract`,
  extension: [{ url: 'definition', valueCanonical: canonical }, ...(fullUrl ? [{ url: 'fullUrl', valueString: fullUrl }] : [])],
});
const extractValue = (definition: string, value: Json) => ({
  url: `${SDC}sdc-questionnaire-definitionExtractValue`,
  extension: [{ url: 'definition', valueUri: definition }, value],
});
const expression = (text: string) => ({ url: 'expression', valueExpression: { language: 'text/fhirpath', expression: text } });

async function extract(p: ProjectClient, questionnaire: Json, response: Json) {
  const url = `http://example.org/Questionnaire/${randomUUID()}`;
  await create(p, { resourceType: 'Questionnaire', status: 'active', ...questionnaire, url });
  return p.post('/QuestionnaireResponse/$extract', { resourceType: 'QuestionnaireResponse', status: 'completed', ...response, questionnaire: url });
}

const entriesOf = (bundle: Json, type: string): Json[] => (bundle.entry ?? []).filter((e: Json) => e.resource.resourceType === type);

/** A Patient (fullUrl from the root's allocated id) and a Condition per repetition of a group, whose subject is that id. */
const patientWithProblems = {
  extension: [allocateId('newPatient'), definitionExtract(`${SD}Patient`, '%newPatient')],
  item: [
    { linkId: 'family', type: 'string', definition: `${SD}Patient#Patient.name.family` },
    {
      linkId: 'problem',
      type: 'group',
      repeats: true,
      extension: [definitionExtract(`${SD}Condition`), extractValue(`${SD}Condition#Condition.subject`, expression('%newPatient'))],
      item: [{ linkId: 'what', type: 'string', definition: `${SD}Condition#Condition.code.text` }],
    },
  ],
};

const problemsAnswers = {
  item: [
    { linkId: 'family', answer: [{ valueString: 'Lee' }] },
    { linkId: 'problem', item: [{ linkId: 'what', answer: [{ valueString: 'asthma' }] }] },
    { linkId: 'problem', item: [{ linkId: 'what', answer: [{ valueString: 'eczema' }] }] },
  ],
};

describe('$extract, extractAllocateId', () => {
  it("gives the Questionnaire's id to the fullUrl and the references that name it", async () => {
    const p = api.newProject();
    const res = await extract(p, patientWithProblems, problemsAnswers);
    expect(res.status, res.text).toBe(200);
    const [patient] = entriesOf(res.body, 'Patient');
    expect(patient.fullUrl).toMatch(/^urn:uuid:[0-9a-f-]{36}$/);
    const conditions = entriesOf(res.body, 'Condition');
    expect(conditions.map((e: Json) => e.resource.code.text)).toEqual(['asthma', 'eczema']);
    expect(conditions.map((e: Json) => e.resource.subject)).toEqual([ref(patient.fullUrl), ref(patient.fullUrl)]);
  });

  it('gives a Bundle that, posted, creates the resources referring to each other', async () => {
    const p = api.newProject();
    const res = await extract(p, patientWithProblems, problemsAnswers);
    const posted = await p.post('', res.body);
    expect(posted.status, posted.text).toBe(200);
    const patients = (await p.get('/Patient?family=Lee')).body.entry;
    expect(patients).toHaveLength(1);
    const conditions = (await p.get(`/Condition?subject=Patient/${patients[0].resource.id}`)).body.entry ?? [];
    expect(conditions).toHaveLength(2);
  });

  it('allocates a new id for each repetition of the item that declares it', async () => {
    const p = api.newProject();
    const questionnaire = {
      item: [
        {
          linkId: 'carer',
          type: 'group',
          repeats: true,
          extension: [allocateId('carerId'), definitionExtract(`${SD}RelatedPerson`, '%carerId')],
          item: [
            { linkId: 'carer-name', type: 'string', definition: `${SD}RelatedPerson#RelatedPerson.name.text` },
            {
              linkId: 'carer-note',
              type: 'group',
              extension: [
                definitionExtract(`${SD}Observation`),
                extractValue(`${SD}Observation#Observation.status`, { url: 'fixed-value', valueCode: 'final' }),
                extractValue(`${SD}Observation#Observation.code.text`, { url: 'fixed-value', valueString: 'carer note' }),
                extractValue(`${SD}Observation#Observation.performer`, expression('%carerId')),
              ],
              item: [{ linkId: 'note', type: 'string', definition: `${SD}Observation#Observation.valueString` }],
            },
          ],
        },
      ],
    };
    const carer = (name: string) => ({ linkId: 'carer', item: [{ linkId: 'carer-name', answer: [{ valueString: name }] }, { linkId: 'carer-note', item: [{ linkId: 'note', answer: [{ valueString: `by ${name}` }] }] }] });
    const res = await extract(p, questionnaire, { subject: ref('Patient/x'), item: [carer('Ann'), carer('Bob')] });
    expect(res.status, res.text).toBe(200);
    const carers = entriesOf(res.body, 'RelatedPerson');
    const notes = entriesOf(res.body, 'Observation');
    expect(new Set(carers.map((e: Json) => e.fullUrl)).size).toBe(2);
    for (const [index, name] of ['Ann', 'Bob'].entries()) {
      const note = notes.find((e: Json) => e.resource.valueString === `by ${name}`);
      expect(note.resource).toMatchObject({ status: 'final', code: { text: 'carer note' }, performer: [ref(carers[index].fullUrl)] });
      expect(carers[index].resource.name).toEqual([{ text: name }]);
    }
  });

  it('is 400 for an extractAllocateId that names no variable', async () => {
    const p = api.newProject();
    const res = await extract(p, { ...patientWithProblems, extension: [allocateId('new patient'), definitionExtract(`${SD}Patient`)] }, problemsAnswers);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('extractAllocateId');
  });
});

describe('$extract, updates of stored resources', () => {
  const patientItems = [
    { linkId: 'id', type: 'string', definition: `${SD}Patient#Patient.id` },
    { linkId: 'birth', type: 'date', definition: `${SD}Patient#Patient.birthDate` },
  ];

  it('puts a resource whose answers set its id at that id, and posting the Bundle updates it', async () => {
    const p = api.newProject();
    const patient = await create(p, patientBody());
    const res = await extract(p, { extension: [definitionExtract(`${SD}Patient`)], item: patientItems }, {
      item: [{ linkId: 'id', answer: [{ valueString: patient }] }, { linkId: 'birth', answer: [{ valueDate: '1990-04-02' }] }],
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.entry[0].request).toEqual({ method: 'PUT', url: `Patient/${patient}` });
    expect((await p.post('', res.body)).status).toBe(200);
    expect((await p.get(`/Patient/${patient}`)).body.birthDate).toBe('1990-04-02');
  });

  it('updates the stored resource a FHIRPath itemExtractionContext names, if unchanged since read', async () => {
    const p = api.newProject();
    const patient = await create(p, patientBody({ gender: 'male' }));
    const questionnaire = { extension: [context({ valueExpression: { language: 'text/fhirpath', expression: '%resource.subject' } })], item: patientItems.slice(1) };
    const res = await extract(p, questionnaire, { subject: ref(`Patient/${patient}`), item: [{ linkId: 'birth', answer: [{ valueDate: '1985-01-31' }] }] });
    expect(res.status, res.text).toBe(200);
    const version = (await p.get(`/Patient/${patient}`)).body.meta.versionId;
    expect(res.body.entry[0].request).toEqual({ method: 'PUT', url: `Patient/${patient}`, ifMatch: `W/"${version}"` });
    expect((await p.post('', res.body)).status).toBe(200);
    const read = (await p.get(`/Patient/${patient}`)).body;
    expect(read).toMatchObject({ birthDate: '1985-01-31', gender: 'male' });
  });

  it('creates the resource when the FHIRPath context names one the project does not hold', async () => {
    const p = api.newProject();
    const questionnaire = { extension: [context({ valueExpression: { language: 'text/fhirpath', expression: '%resource.subject' } })], item: patientItems.slice(1) };
    const res = await extract(p, questionnaire, { subject: ref(`Patient/${randomUUID()}`), item: [{ linkId: 'birth', answer: [{ valueDate: '1985-01-31' }] }] });
    expect(res.status, res.text).toBe(200);
    expect(res.body.entry[0].request).toEqual({ method: 'POST', url: 'Patient' });
  });

  it('is 400 for a definitionExtractValue naming an element of another resource type', async () => {
    const p = api.newProject();
    const questionnaire = { extension: [definitionExtract(`${SD}Patient`), extractValue(`${SD}Observation#Observation.status`, { url: 'fixed-value', valueCode: 'final' })], item: patientItems.slice(1) };
    const res = await extract(p, questionnaire, { item: [{ linkId: 'birth', answer: [{ valueDate: '1985-01-31' }] }] });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('definitionExtractValue');
  });
});
