import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';
import { create } from '../search-api/helpers.js';
import { data } from '../graphql/resource-helpers.js';

/** `$extract` (SDC Form Data Extraction): observation-based and definition-based, as a transaction Bundle. */

const api = await useTestServer();

type Json = any;
const SDC = 'http://hl7.org/fhir/uv/sdc/StructureDefinition/';
const LOINC = 'http://loinc.org';
const SD = 'http://hl7.org/fhir/StructureDefinition/';
const ref = (reference: string) => ({ reference });
const loinc = (code: string, display: string) => [{ system: LOINC, code, display }];
const observationExtract = (value: boolean) => ({ url: `${SDC}sdc-questionnaire-observationExtract`, valueBoolean: value });
const context = (extension: Json) => ({ url: `${SDC}sdc-questionnaire-itemExtractionContext`, ...extension });
const definitionExtract = (canonical: string) => ({ url: `${SDC}sdc-questionnaire-definitionExtract`, extension: [{ url: 'definition', valueCanonical: canonical }] });
const VITAL_SIGNS = { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: 'vital-signs' }] };

/** Items for observation-based extraction: marked, linked by observationLinkPeriod, inherited from a group, and unmarked. */
function vitalsQuestionnaire(url: string): Json {
  return {
    resourceType: 'Questionnaire',
    url,
    status: 'active',
    item: [
      {
        linkId: 'weight',
        type: 'decimal',
        code: loinc('29463-7', 'Body weight'),
        extension: [observationExtract(true), { url: `${SDC}sdc-questionnaire-observation-extract-category`, valueCodeableConcept: VITAL_SIGNS }],
      },
      {
        linkId: 'heart-rate',
        type: 'integer',
        code: loinc('8867-4', 'Heart rate'),
        extension: [{ url: `${SDC}sdc-questionnaire-observationLinkPeriod`, valueDuration: { value: 1, unit: 'd', system: 'http://unitsofmeasure.org', code: 'd' } }],
      },
      { linkId: 'smoker', type: 'boolean', code: loinc('72166-2', 'Tobacco smoking status') },
      {
        linkId: 'history',
        type: 'group',
        extension: [observationExtract(true)],
        item: [
          { linkId: 'symptom', type: 'choice', code: loinc('75325-1', 'Symptom') },
          { linkId: 'quiet', type: 'boolean', code: loinc('11111-1', 'Not extracted'), extension: [observationExtract(false)] },
          { linkId: 'note', type: 'string' },
        ],
      },
    ],
  };
}

function vitalsResponse(url: string, patient: string): Json {
  return {
    resourceType: 'QuestionnaireResponse',
    questionnaire: url,
    status: 'completed',
    subject: ref(`Patient/${patient}`),
    authored: '2026-11-26T10:00:00Z',
    item: [
      { linkId: 'weight', answer: [{ valueDecimal: 72.5 }] },
      { linkId: 'heart-rate', answer: [{ valueInteger: 64 }] },
      { linkId: 'smoker', answer: [{ valueBoolean: false }] },
      {
        linkId: 'history',
        item: [
          { linkId: 'symptom', answer: [{ valueCoding: { system: 'http://snomed.info/sct', code: '25064002', display: 'Headache' } }] },
          { linkId: 'quiet', answer: [{ valueBoolean: true }] },
          { linkId: 'note', answer: [{ valueString: 'none' }] },
        ],
      },
    ],
  };
}

/** A project with a patient and the vitals Questionnaire stored under a fresh url. */
async function vitals(p: ProjectClient) {
  const url = `http://example.org/Questionnaire/vitals-${randomUUID()}`;
  const patient = await create(p, patientBody());
  const questionnaire = await create(p, vitalsQuestionnaire(url));
  return { url, patient, questionnaire, response: vitalsResponse(url, patient) };
}

const asParameters = (response: Json) => ({ resourceType: 'Parameters', parameter: [{ name: 'questionnaire-response', resource: response }] });

function resourcesOf(bundle: Json, type: string): Json[] {
  return (bundle.entry ?? []).map((e: Json) => e.resource).filter((r: Json) => r.resourceType === type);
}

function observationByCode(bundle: Json, code: string): Json | undefined {
  return resourcesOf(bundle, 'Observation').find((o) => o.code.coding[0].code === code);
}

/** Name, gender and birth date items writing into the Patient that `opening` (an extension on the Questionnaire) opens. */
function patientQuestionnaire(opening: Json): Json {
  return {
    resourceType: 'Questionnaire',
    status: 'active',
    extension: [opening],
    item: [
      {
        linkId: 'name',
        type: 'group',
        definition: `${SD}Patient#Patient.name`,
        item: [
          { linkId: 'given', type: 'string', definition: `${SD}Patient#Patient.name.given` },
          { linkId: 'family', type: 'string', definition: `${SD}Patient#Patient.name.family` },
        ],
      },
      { linkId: 'gender', type: 'choice', definition: `${SD}Patient#Patient.gender` },
      { linkId: 'birth', type: 'date', definition: `${SD}Patient#Patient.birthDate` },
    ],
  };
}

const patientAnswers = (questionnaire?: string): Json => ({
  resourceType: 'QuestionnaireResponse',
  status: 'completed',
  ...(questionnaire ? { questionnaire } : {}),
  item: [
    { linkId: 'name', item: [{ linkId: 'given', answer: [{ valueString: 'Ann' }] }, { linkId: 'family', answer: [{ valueString: 'Lee' }] }] },
    { linkId: 'gender', answer: [{ valueCoding: { system: 'http://hl7.org/fhir/administrative-gender', code: 'female' } }] },
    { linkId: 'birth', answer: [{ valueDate: '1990-04-02' }] },
  ],
});

/** Stores a Questionnaire under a fresh url and answers the url. */
async function storeQuestionnaire(p: ProjectClient, questionnaire: Json): Promise<string> {
  const url = `http://example.org/Questionnaire/${randomUUID()}`;
  await create(p, { ...questionnaire, url });
  return url;
}

describe('$extract, observation-based', () => {
  it('makes one Observation per answer of each marked item with a code, as a transaction Bundle', async () => {
    const p = api.newProject();
    const { patient, response } = await vitals(p);
    const res = await p.post('/QuestionnaireResponse/$extract', asParameters(response));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ resourceType: 'Bundle', type: 'transaction' });
    const observations = resourcesOf(res.body, 'Observation');
    expect(observations.map((o) => o.code.coding[0].code).sort()).toEqual(['29463-7', '75325-1', '8867-4']);
    for (const observation of observations) {
      expect(observation).toMatchObject({ status: 'final', subject: ref(`Patient/${patient}`), effectiveDateTime: '2026-11-26T10:00:00Z' });
    }
    for (const entry of res.body.entry) {
      expect(entry.fullUrl).toMatch(/^urn:uuid:/);
      expect(entry.request).toEqual({ method: 'POST', url: 'Observation' });
    }
  });

  it('gives each Observation the answer as its value, converted to a type Observation takes', async () => {
    const p = api.newProject();
    const { response } = await vitals(p);
    const res = await p.post('/QuestionnaireResponse/$extract', asParameters(response));
    expect(observationByCode(res.body, '29463-7')!.valueQuantity).toEqual({ value: 72.5 });
    expect(observationByCode(res.body, '8867-4')!.valueInteger).toBe(64);
    expect(observationByCode(res.body, '75325-1')!.valueCodeableConcept.coding[0].code).toBe('25064002');
  });

  it('sets the category that observation-extract-category names', async () => {
    const p = api.newProject();
    const { response } = await vitals(p);
    const res = await p.post('/QuestionnaireResponse/$extract', asParameters(response));
    expect(observationByCode(res.body, '29463-7')!.category).toEqual([VITAL_SIGNS]);
    expect(observationByCode(res.body, '8867-4')!.category).toBeUndefined();
  });

  it("names the response's author as performer, unless it is a Device (which Observation.performer cannot name)", async () => {
    const p = api.newProject();
    const { response } = await vitals(p);
    const doctor = await create(p, { resourceType: 'Practitioner' });
    const byDoctor = await p.post('/QuestionnaireResponse/$extract', asParameters({ ...response, author: ref(`Practitioner/${doctor}`) }));
    expect(observationByCode(byDoctor.body, '8867-4')!.performer).toEqual([ref(`Practitioner/${doctor}`)]);
    const byDevice = await p.post('/QuestionnaireResponse/$extract', asParameters({ ...response, author: ref('Device/scale') }));
    expect(observationByCode(byDevice.body, '8867-4')!.performer).toBeUndefined();
  });

  it('takes the bare QuestionnaireResponse as the body', async () => {
    const p = api.newProject();
    const { response } = await vitals(p);
    const res = await p.post('/QuestionnaireResponse/$extract', response);
    expect(res.status, res.text).toBe(200);
    expect(resourcesOf(res.body, 'Observation')).toHaveLength(3);
  });

  it('extracts a stored response at instance level, deriving the Observations from it', async () => {
    const p = api.newProject();
    const { response } = await vitals(p);
    const stored = await create(p, response);
    const res = await p.post(`/QuestionnaireResponse/${stored}/$extract`, { resourceType: 'Parameters' });
    expect(res.status, res.text).toBe(200);
    const observations = resourcesOf(res.body, 'Observation');
    expect(observations).toHaveLength(3);
    for (const observation of observations) expect(observation.derivedFrom).toEqual([ref(`QuestionnaireResponse/${stored}`)]);
    expect((await p.get(`/QuestionnaireResponse/${stored}/$extract`)).body.entry).toHaveLength(3);
  });

  it('answers the same on the Questionnaire/$extract route', async () => {
    const p = api.newProject();
    const { response } = await vitals(p);
    const res = await p.post('/Questionnaire/$extract', asParameters(response));
    expect(res.status, res.text).toBe(200);
    expect(resourcesOf(res.body, 'Observation')).toHaveLength(3);
  });

  it('extracts with the Questionnaire of Questionnaire/{id}/$extract, whatever the response names', async () => {
    const p = api.newProject();
    const { questionnaire, response } = await vitals(p);
    const res = await p.post(`/Questionnaire/${questionnaire}/$extract`, asParameters({ ...response, questionnaire: 'http://example.org/unknown' }));
    expect(res.status, res.text).toBe(200);
    expect(resourcesOf(res.body, 'Observation')).toHaveLength(3);
  });

  it('is the GraphQL field QuestionnaireResponseExtract', async () => {
    const p = api.newProject();
    const { response } = await vitals(p);
    const query = 'query Extract($qr: JSON) { QuestionnaireResponseExtract(questionnaire_response: $qr) { type entry { request { method url } } } }';
    const result = await data(api, p, query, { qr: response });
    expect(result.QuestionnaireResponseExtract.type).toBe('transaction');
    expect(result.QuestionnaireResponseExtract.entry).toHaveLength(3);
  });

  it('gives a Bundle that, posted to the base URL, creates the Observations', async () => {
    const p = api.newProject();
    const { patient, response } = await vitals(p);
    const bundle = (await p.post('/QuestionnaireResponse/$extract', asParameters(response))).body;
    const posted = await p.post('', bundle);
    expect(posted.status, posted.text).toBe(200);
    expect(posted.body.type).toBe('transaction-response');
    expect(posted.body.entry.map((e: Json) => e.response.status)).toEqual(['201 Created', '201 Created', '201 Created']);
    const found = await p.get(`/Observation?subject=Patient/${patient}`);
    expect(found.body.entry).toHaveLength(3);
  });
});

describe('$extract, definition-based', () => {
  it('writes answers into the resource the Questionnaire\'s itemExtractionContext opens, by item.definition', async () => {
    const p = api.newProject();
    const url = await storeQuestionnaire(p, patientQuestionnaire(context({ valueCode: 'Patient' })));
    const res = await p.post('/QuestionnaireResponse/$extract', asParameters(patientAnswers(url)));
    expect(res.status, res.text).toBe(200);
    expect(res.body.entry).toHaveLength(1);
    expect(res.body.entry[0].request).toEqual({ method: 'POST', url: 'Patient' });
    expect(res.body.entry[0].resource).toEqual({
      resourceType: 'Patient',
      name: [{ given: ['Ann'], family: 'Lee' }],
      gender: 'female',
      birthDate: '1990-04-02',
    });
  });

  it('opens one resource per repetition of a group with an itemExtractionContext, naming the subject', async () => {
    const p = api.newProject();
    const patient = await create(p, patientBody());
    const url = await storeQuestionnaire(p, {
      resourceType: 'Questionnaire',
      status: 'active',
      item: [
        {
          linkId: 'problem',
          type: 'group',
          repeats: true,
          extension: [context({ valueCode: 'Condition' })],
          item: [
            { linkId: 'what', type: 'choice', definition: `${SD}Condition#Condition.code` },
            { linkId: 'since', type: 'date', definition: `${SD}Condition#Condition.onset[x]` },
          ],
        },
      ],
    });
    const problem = (code: string, since: string) => ({
      linkId: 'problem',
      item: [
        { linkId: 'what', answer: [{ valueCoding: { system: 'http://snomed.info/sct', code } }] },
        { linkId: 'since', answer: [{ valueDate: since }] },
      ],
    });
    const response = { resourceType: 'QuestionnaireResponse', status: 'completed', questionnaire: url, subject: ref(`Patient/${patient}`), item: [problem('195967001', '2001-01-01'), problem('38341003', '2015-06-01')] };
    const res = await p.post('/QuestionnaireResponse/$extract', asParameters(response));
    expect(res.status, res.text).toBe(200);
    const conditions = resourcesOf(res.body, 'Condition');
    expect(conditions).toEqual([
      { resourceType: 'Condition', code: { coding: [{ system: 'http://snomed.info/sct', code: '195967001' }] }, onsetDateTime: '2001-01-01', subject: ref(`Patient/${patient}`) },
      { resourceType: 'Condition', code: { coding: [{ system: 'http://snomed.info/sct', code: '38341003' }] }, onsetDateTime: '2015-06-01', subject: ref(`Patient/${patient}`) },
    ]);
    const posted = await p.post('', res.body);
    expect(posted.status, posted.text).toBe(200);
    expect((await p.get(`/Condition?subject=Patient/${patient}`)).body.entry).toHaveLength(2);
  });

  it("opens the resource SDC 4's definitionExtract names by its core StructureDefinition", async () => {
    const p = api.newProject();
    const questionnaire = patientQuestionnaire(definitionExtract(`${SD}Patient`));
    const url = await storeQuestionnaire(p, questionnaire);
    const res = await p.post('/QuestionnaireResponse/$extract', asParameters(patientAnswers(url)));
    expect(res.status, res.text).toBe(200);
    expect(res.body.entry[0].resource).toMatchObject({ resourceType: 'Patient', birthDate: '1990-04-02' });
  });

  it("sets the entry's fullUrl and ifNoneExist from the definitionExtract's expressions, evaluated on the response", async () => {
    const p = api.newProject();
    const extension = definitionExtract(`${SD}Patient`);
    extension.extension.push({ url: 'fullUrl', valueString: "'urn:uuid:' + %resource.id" } as Json, { url: 'ifNoneExist', valueString: "'birthdate=' + %resource.item.where(linkId = 'birth').answer.value.toString()" } as Json);
    const url = await storeQuestionnaire(p, patientQuestionnaire(extension));
    const answers = { ...patientAnswers(url), id: 'c4f1d3a2-9b7e-4e1a-8f00-000000000001' };
    const res = await p.post('/QuestionnaireResponse/$extract', asParameters(answers));
    expect(res.status, res.text).toBe(200);
    expect(res.body.entry[0].fullUrl).toBe('urn:uuid:c4f1d3a2-9b7e-4e1a-8f00-000000000001');
    expect(res.body.entry[0].request).toEqual({ method: 'POST', url: 'Patient', ifNoneExist: 'birthdate=1990-04-02' });
  });

  it('is 400 for a definitionExtract expression that is not FHIRPath', async () => {
    const p = api.newProject();
    const extension = definitionExtract(`${SD}Patient`);
    extension.extension.push({ url: 'ifNoneExist', valueString: "'a' +" } as Json);
    const url = await storeQuestionnaire(p, patientQuestionnaire(extension));
    const res = await p.post('/QuestionnaireResponse/$extract', asParameters(patientAnswers(url)));
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('ifNoneExist');
  });

  it('opens a resource of the type of a profile the project holds, naming the profile in meta.profile', async () => {
    const p = api.newProject();
    const profile = `http://example.org/StructureDefinition/${randomUUID()}`;
    await create(p, {
      resourceType: 'StructureDefinition',
      url: profile,
      name: 'ExamplePatient',
      status: 'active',
      kind: 'resource',
      abstract: false,
      type: 'Patient',
      baseDefinition: `${SD}Patient`,
      derivation: 'constraint',
      differential: { element: [{ id: 'Patient', path: 'Patient' }] },
    });
    const questionnaire = patientQuestionnaire(definitionExtract(profile));
    const url = await storeQuestionnaire(p, questionnaire);
    const res = await p.post('/QuestionnaireResponse/$extract', asParameters(patientAnswers(url)));
    expect(res.status, res.text).toBe(200);
    expect(res.body.entry[0].resource).toMatchObject({ resourceType: 'Patient', meta: { profile: [profile] }, gender: 'female' });
  });

  it('makes no resource for a context none of whose items has an answer', async () => {
    const p = api.newProject();
    const url = await storeQuestionnaire(p, patientQuestionnaire(context({ valueCode: 'Patient' })));
    const response = { ...patientAnswers(url), subject: ref('Patient/someone'), item: [{ linkId: 'name', item: [{ linkId: 'given' }] }] };
    const res = await p.post('/QuestionnaireResponse/$extract', asParameters(response));
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ resourceType: 'Bundle', type: 'transaction' });
  });

  it('updates the stored resource an x-fhir-query context finds, and posting the Bundle changes it', async () => {
    const p = api.newProject();
    const mrn = randomUUID();
    const patient = await create(p, patientBody({ identifier: [{ system: 'http://example.org/mrn', value: mrn }] }));
    const url = await storeQuestionnaire(
      p,
      patientQuestionnaire(context({ valueExpression: { language: 'application/x-fhir-query', expression: `Patient?identifier=http://example.org/mrn|${mrn}` } })),
    );
    const res = await p.post('/QuestionnaireResponse/$extract', asParameters({ ...patientAnswers(url), item: patientAnswers().item.slice(2) }));
    expect(res.status, res.text).toBe(200);
    expect(res.body.entry).toHaveLength(1);
    const version = (await p.get(`/Patient/${patient}`)).body.meta.versionId;
    expect(res.body.entry[0].request).toEqual({ method: 'PUT', url: `Patient/${patient}`, ifMatch: `W/"${version}"` });
    const posted = await p.post('', res.body);
    expect(posted.status, posted.text).toBe(200);
    const read = (await p.get(`/Patient/${patient}`)).body;
    expect(read.birthDate).toBe('1990-04-02');
    expect(read.identifier[0].value).toBe(mrn);
  });

  it('creates the resource when the x-fhir-query context finds none', async () => {
    const p = api.newProject();
    const url = await storeQuestionnaire(
      p,
      patientQuestionnaire(context({ valueExpression: { language: 'application/x-fhir-query', expression: `Patient?identifier=http://example.org/mrn|${randomUUID()}` } })),
    );
    const res = await p.post('/QuestionnaireResponse/$extract', asParameters(patientAnswers(url)));
    expect(res.status, res.text).toBe(200);
    expect(res.body.entry[0].request).toEqual({ method: 'POST', url: 'Patient' });
  });
});

/** A Questionnaire whose weight item fills a contained Observation template (SDC template-based extraction). */
function templateQuestionnaire(url: string, effective = '%resource.authored'): Json {
  const value = (expression: string) => ({ extension: [{ url: `${SDC}sdc-questionnaire-templateExtractValue`, valueString: expression }] });
  return {
    resourceType: 'Questionnaire',
    url,
    status: 'active',
    contained: [
      {
        resourceType: 'Observation',
        id: 'weight-template',
        status: 'final',
        code: { coding: loinc('29463-7', 'Body weight') },
        valueQuantity: { _value: value('answer.value'), unit: 'kg' },
        _effectiveDateTime: value(effective),
        subject: { extension: [{ url: `${SDC}sdc-questionnaire-templateExtractContext`, valueString: '%resource.subject' }], _reference: value('reference') },
      },
    ],
    item: [
      {
        linkId: 'weight',
        type: 'decimal',
        extension: [{ url: `${SDC}sdc-questionnaire-templateExtract`, extension: [{ url: 'template', valueReference: ref('#weight-template') }] }],
      },
    ],
  };
}

describe('$extract, template-based', () => {
  it('fills the contained template resource from the answers', async () => {
    const p = api.newProject();
    const patient = await create(p, patientBody());
    const url = `http://example.org/Questionnaire/${randomUUID()}`;
    await create(p, templateQuestionnaire(url));
    const response = { ...vitalsResponse(url, patient), item: [{ linkId: 'weight', answer: [{ valueDecimal: 80.1 }] }] };
    const res = await p.post('/QuestionnaireResponse/$extract', asParameters(response));
    expect(res.status, res.text).toBe(200);
    expect(res.body.entry).toHaveLength(1);
    expect(res.body.entry[0].request).toEqual({ method: 'POST', url: 'Observation' });
    expect(res.body.entry[0].resource).toEqual({
      resourceType: 'Observation',
      status: 'final',
      code: { coding: loinc('29463-7', 'Body weight') },
      valueQuantity: { value: 80.1, unit: 'kg' },
      effectiveDateTime: '2026-11-26T10:00:00Z',
      subject: ref(`Patient/${patient}`),
    });
    const posted = await p.post('', res.body);
    expect(posted.status, posted.text).toBe(200);
    expect((await p.get(`/Observation?subject=Patient/${patient}`)).body.entry).toHaveLength(1);
  });

  it('is 400 naming the problem when a template expression does not evaluate', async () => {
    const p = api.newProject();
    const url = `http://example.org/Questionnaire/${randomUUID()}`;
    await create(p, templateQuestionnaire(url, '%resource.(('));
    const response = { ...vitalsResponse(url, 'x'), item: [{ linkId: 'weight', answer: [{ valueDecimal: 80.1 }] }] };
    const res = await p.post('/QuestionnaireResponse/$extract', asParameters(response));
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].details.text).toContain('Template-based extraction failed');
  });
});

describe('$extract errors', () => {
  async function expectInvalid(res: { status: number; body: Json; text: string }, mention: string) {
    expect(res.status, res.text).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0].code).toBe('invalid');
    expect(res.body.issue[0].details.text).toContain(mention);
  }

  it('is 400 without a QuestionnaireResponse', async () => {
    await expectInvalid(await api.newProject().post('/QuestionnaireResponse/$extract', { resourceType: 'Parameters' }), 'needs a QuestionnaireResponse');
  });

  it('is 400 for a body that is another kind of resource', async () => {
    await expectInvalid(await api.newProject().post('/QuestionnaireResponse/$extract', patientBody()), 'QuestionnaireResponse');
  });

  it('is 400 for a response that names no questionnaire', async () => {
    const res = await api.newProject().post('/QuestionnaireResponse/$extract', { resourceType: 'QuestionnaireResponse', status: 'completed' });
    await expectInvalid(res, 'names no questionnaire');
  });

  it('is 400 naming a questionnaire the project does not hold', async () => {
    const res = await api.newProject().post('/QuestionnaireResponse/$extract', vitalsResponse('http://example.org/Questionnaire/nowhere', 'x'));
    await expectInvalid(res, 'http://example.org/Questionnaire/nowhere');
  });

  it('is 400 naming an item whose definition is no element', async () => {
    const p = api.newProject();
    const questionnaire = patientQuestionnaire(context({ valueCode: 'Patient' }));
    questionnaire.item[2].definition = `${SD}Patient#Patient.shoeSize`;
    const url = await storeQuestionnaire(p, questionnaire);
    await expectInvalid(await p.post('/QuestionnaireResponse/$extract', asParameters(patientAnswers(url))), 'shoeSize');
  });

  it('is 400 naming an item whose answer cannot be written to its element', async () => {
    const p = api.newProject();
    const url = await storeQuestionnaire(p, patientQuestionnaire(context({ valueCode: 'Patient' })));
    const response = patientAnswers(url);
    response.item[2].answer = [{ valueBoolean: true }];
    await expectInvalid(await p.post('/QuestionnaireResponse/$extract', asParameters(response)), 'Item "birth"');
  });

  it('is 400 for a definitionExtract naming a profile the project does not hold', async () => {
    const p = api.newProject();
    const url = await storeQuestionnaire(p, patientQuestionnaire(definitionExtract('http://example.org/StructureDefinition/nowhere')));
    await expectInvalid(await p.post('/QuestionnaireResponse/$extract', asParameters(patientAnswers(url))), 'http://example.org/StructureDefinition/nowhere');
  });

  it('is 400 for an itemExtractionContext that names no resource type', async () => {
    const p = api.newProject();
    const url = await storeQuestionnaire(p, patientQuestionnaire(context({ valueCode: 'Nonsense' })));
    await expectInvalid(await p.post('/QuestionnaireResponse/$extract', asParameters(patientAnswers(url))), 'Nonsense');
  });
});
