import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { R4_EXAMPLES } from '../helpers/fixtures.js';
import { patientBody, projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient } from '../auth/helpers.js';
import { invitedUser, patientUser } from '../auth/smart-helpers.js';
import { create } from '../search-api/helpers.js';
import { data } from '../graphql/resource-helpers.js';

/** `Patient/{id}/$summary`: an International Patient Summary (IPS 1.1.0) document Bundle. */

const api = await useTestServer();

type Json = any;
const ref = (reference: string) => ({ reference });
const LOINC = 'http://loinc.org';
const category = (code: string) => [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code }] }];

function observation(subject: Json, categoryCode: string, code: string, display: string, valueQuantity: Json) {
  return { resourceType: 'Observation', status: 'final', category: category(categoryCode), code: { coding: [{ system: LOINC, code, display }] }, subject, valueQuantity };
}

function summary(client: ProjectClient, patient: string) {
  return client.get(`/Patient/${patient}/$summary`);
}

function composition(bundle: Json): Json {
  return bundle.entry[0].resource;
}

function sectionByCode(bundle: Json, code: string): Json | undefined {
  return composition(bundle).section.find((s: Json) => s.code.coding[0].code === code);
}

/** The entry a reference of the Composition names: by fullUrl (urn:uuid) or by Type/id. */
function resolve(bundle: Json, reference: string): Json | undefined {
  return bundle.entry.find(
    (e: Json) => e.fullUrl === reference || `${e.resource.resourceType}/${e.resource.id}` === reference,
  )?.resource;
}

function keysOf(bundle: Json): string[] {
  return bundle.entry.map((e: Json) => `${e.resource.resourceType}/${e.resource.id}`);
}

/** A patient with a record in most IPS sections, what they reference, and another patient's Condition. */
async function patientWithRecords(p: ProjectClient) {
  const patient = await create(p, patientBody());
  const subject = ref(`Patient/${patient}`);
  const doctor = await create(p, { resourceType: 'Practitioner', name: [{ family: 'House' }] });
  const medication = await create(p, { resourceType: 'Medication', code: { text: 'Amoxicillin 500 mg' } });
  const device = await create(p, { resourceType: 'Device', type: { text: 'Pacemaker' } });
  const ids = {
    patient,
    doctor,
    medication,
    device,
    condition: await create(p, { resourceType: 'Condition', code: { text: 'Asthma' }, subject, asserter: ref(`Practitioner/${doctor}`) }),
    allergy: await create(p, {
      resourceType: 'AllergyIntolerance',
      clinicalStatus: { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical', code: 'active' }] },
      code: { text: 'Penicillin' },
      patient: subject,
    }),
    request: await create(p, {
      resourceType: 'MedicationRequest',
      status: 'active',
      intent: 'order',
      medicationReference: ref(`Medication/${medication}`),
      subject,
      requester: ref(`Practitioner/${doctor}`),
    }),
    immunization: await create(p, {
      resourceType: 'Immunization',
      status: 'completed',
      vaccineCode: { text: 'Influenza' },
      patient: subject,
      occurrenceDateTime: '2024-10-01',
    }),
    lab: await create(p, observation(subject, 'laboratory', '2339-0', 'Glucose', { value: 5.4, unit: 'mmol/L' })),
    vital: await create(p, observation(subject, 'vital-signs', '8867-4', 'Heart rate', { value: 72, unit: '/min' })),
    procedure: await create(p, { resourceType: 'Procedure', status: 'completed', code: { text: 'Appendectomy' }, subject }),
    deviceUse: await create(p, { resourceType: 'DeviceUseStatement', status: 'active', subject, device: ref(`Device/${device}`) }),
  };
  const other = await create(p, patientBody());
  const otherCondition = await create(p, { resourceType: 'Condition', code: { text: 'Gout' }, subject: ref(`Patient/${other}`) });
  return { ...ids, other, otherCondition };
}

describe('Patient/$summary', () => {
  it('answers a document Bundle with identifier and timestamp, the Composition first', async () => {
    const p = api.newProject();
    const patient = await create(p, patientBody());
    const res = await summary(p, patient);
    expect(res.status, res.text).toBe(200);
    expect(res.body.resourceType).toBe('Bundle');
    expect(res.body.type).toBe('document');
    expect(res.body.identifier).toMatchObject({ system: 'urn:ietf:rfc:3986', value: expect.stringMatching(/^urn:uuid:/) });
    expect(Date.parse(res.body.timestamp)).not.toBeNaN();
    const first = composition(res.body);
    expect(first.resourceType).toBe('Composition');
    expect(first.status).toBe('final');
    expect(first.type.coding[0]).toMatchObject({ system: LOINC, code: '60591-5' });
    expect(first.subject).toEqual(ref(`Patient/${patient}`));
    expect(first.title).toBeTruthy();
    expect(Date.parse(first.date)).not.toBeNaN();
  });

  it('gives every entry a fullUrl, and no resource twice', async () => {
    const p = api.newProject();
    const { patient } = await patientWithRecords(p);
    const res = await summary(p, patient);
    const fullUrls = res.body.entry.map((e: Json) => e.fullUrl);
    expect(fullUrls.every((url: unknown) => typeof url === 'string' && /^(urn:uuid:|http)/.test(url))).toBe(true);
    expect(new Set(fullUrls).size).toBe(fullUrls.length);
    expect(new Set(keysOf(res.body)).size).toBe(keysOf(res.body).length);
    // Stored resources: their absolute URL on the server's base (BASE_URL).
    expect(res.body.entry.find((e: Json) => e.resource.id === patient).fullUrl).toMatch(new RegExp(`^https?://[^/]+/fhir/R4/Patient/${patient}$`));
  });

  it('lists each record in its IPS section', async () => {
    const p = api.newProject();
    const r = await patientWithRecords(p);
    const res = await summary(p, r.patient);
    expect(res.status, res.text).toBe(200);
    const expected: [string, string][] = [
      ['11450-4', `Condition/${r.condition}`],
      ['48765-2', `AllergyIntolerance/${r.allergy}`],
      ['10160-0', `MedicationRequest/${r.request}`],
      ['11369-6', `Immunization/${r.immunization}`],
      ['30954-2', `Observation/${r.lab}`],
      ['8716-3', `Observation/${r.vital}`],
      ['47519-4', `Procedure/${r.procedure}`],
      ['46264-8', `DeviceUseStatement/${r.deviceUse}`],
    ];
    for (const [code, reference] of expected) {
      expect(sectionByCode(res.body, code)?.entry, code).toEqual([ref(reference)]);
      expect(resolve(res.body, reference), reference).toBeDefined();
    }
  });

  it('leaves out the optional sections without data', async () => {
    const p = api.newProject();
    const r = await patientWithRecords(p);
    const res = await summary(p, r.patient);
    const codes = composition(res.body).section.map((s: Json) => s.code.coding[0].code);
    expect(codes).not.toContain('11348-0');
    expect(codes).not.toContain('29762-2');
    expect(codes).toHaveLength(8);
  });

  it('gives each section a generated narrative table of its entries', async () => {
    const p = api.newProject();
    const r = await patientWithRecords(p);
    const res = await summary(p, r.patient);
    const problems = sectionByCode(res.body, '11450-4');
    expect(problems.text.status).toBe('generated');
    expect(problems.text.div).toMatch(/^<div xmlns="http:\/\/www.w3.org\/1999\/xhtml"><table>/);
    expect(problems.text.div).toContain('<td>Asthma</td>');
    expect(sectionByCode(res.body, '10160-0').text.div).toContain('<td>Amoxicillin 500 mg</td>');
    expect(sectionByCode(res.body, '30954-2').text.div).toContain('<td>5.4 mmol/L</td>');
  });

  it('holds the IPS "no information" entry in required sections without data', async () => {
    const p = api.newProject();
    const patient = await create(p, patientBody());
    const res = await summary(p, patient);
    const expected: [string, string, string][] = [
      ['10160-0', 'MedicationStatement', 'no-medication-info'],
      ['48765-2', 'AllergyIntolerance', 'no-allergy-info'],
      ['11450-4', 'Condition', 'no-problem-info'],
    ];
    expect(composition(res.body).section).toHaveLength(3);
    for (const [code, type, absent] of expected) {
      const section = sectionByCode(res.body, code);
      expect(section.entry).toHaveLength(1);
      expect(section.entry[0].reference).toMatch(/^urn:uuid:/);
      const entry = resolve(res.body, section.entry[0].reference);
      expect(entry.resourceType).toBe(type);
      const concept = entry.code ?? entry.medicationCodeableConcept;
      expect(concept.coding[0]).toMatchObject({ system: 'http://hl7.org/fhir/uv/ips/CodeSystem/absent-unknown-uv-ips', code: absent });
      expect(section.text.div).toContain('No information');
    }
  });

  it('leaves out records entered in error', async () => {
    const p = api.newProject();
    const patient = await create(p, patientBody());
    const subject = ref(`Patient/${patient}`);
    const verification = { coding: [{ system: 'http://terminology.hl7.org/CodeSystem/condition-ver-status', code: 'entered-in-error' }] };
    const mistaken = await create(p, { resourceType: 'Condition', code: { text: 'Wrong chart' }, subject, verificationStatus: verification });
    const cancelled = await create(p, { resourceType: 'Immunization', status: 'entered-in-error', vaccineCode: { text: 'x' }, patient: subject, occurrenceDateTime: '2024-01-01' });
    const res = await summary(p, patient);
    expect(keysOf(res.body)).not.toContain(`Condition/${mistaken}`);
    expect(keysOf(res.body)).not.toContain(`Immunization/${cancelled}`);
    expect(sectionByCode(res.body, '11369-6')).toBeUndefined();
  });

  it('includes every referenced resource once: the patient, Practitioners, Medications, Devices', async () => {
    const p = api.newProject();
    const r = await patientWithRecords(p);
    const res = await summary(p, r.patient);
    const keys = keysOf(res.body);
    for (const key of [`Patient/${r.patient}`, `Practitioner/${r.doctor}`, `Medication/${r.medication}`, `Device/${r.device}`]) {
      expect(keys.filter((k) => k === key), key).toHaveLength(1);
    }
  });

  it("leaves out other patients' data", async () => {
    const p = api.newProject();
    const r = await patientWithRecords(p);
    const res = await summary(p, r.patient);
    const keys = keysOf(res.body);
    expect(keys).not.toContain(`Patient/${r.other}`);
    expect(keys).not.toContain(`Condition/${r.otherCondition}`);
  });

  it('leaves out a resource of another patient that a record references', async () => {
    const p = api.newProject();
    const patient = await create(p, patientBody());
    const other = await create(p, patientBody());
    const otherObservation = await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'x' }, subject: ref(`Patient/${other}`) });
    await create(p, {
      resourceType: 'Observation',
      status: 'final',
      code: { text: 'y' },
      subject: ref(`Patient/${patient}`),
      derivedFrom: [ref(`Observation/${otherObservation}`)],
    });
    const keys = keysOf((await summary(p, patient)).body);
    expect(keys).not.toContain(`Observation/${otherObservation}`);
    expect(keys).not.toContain(`Patient/${other}`);
  });

  it('names a Device standing for the server as author when the caller has no profile that can author', async () => {
    const p = api.newProject();
    const patient = await create(p, patientBody());
    const res = await summary(p, patient);
    const author = resolve(res.body, composition(res.body).author[0].reference);
    expect(author.resourceType).toBe('Device');
    expect(author.deviceName[0].name).toBe('Flint');
  });

  it("names the caller's Practitioner profile as author", async () => {
    const admin = api.newProject();
    const patient = await create(admin, patientBody());
    const doctor = await invitedUser(api, admin, 'Practitioner');
    const { client } = await doctor.client('openid');
    const res = await summary(client, patient);
    expect(res.status, res.text).toBe(200);
    expect(composition(res.body).author).toEqual([ref(doctor.profile)]);
    expect(keysOf(res.body).filter((k) => k === doctor.profile)).toHaveLength(1);
  });

  it("shows only what the caller's AccessPolicy lets it read", async () => {
    const admin = api.newProject();
    const r = await patientWithRecords(admin);
    const policy = await admin.post('/AccessPolicy', {
      resourceType: 'AccessPolicy',
      name: 'problems only',
      resource: [{ resourceType: 'Patient' }, { resourceType: 'Condition' }],
    });
    const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
    const client = projectClient(api.fhir, admin.projectId, async () => member.token);
    const res = await summary(client, r.patient);
    expect(res.status, res.text).toBe(200);
    const keys = keysOf(res.body);
    expect(keys).toContain(`Condition/${r.condition}`);
    for (const hidden of [`AllergyIntolerance/${r.allergy}`, `Observation/${r.lab}`, `Practitioner/${r.doctor}`, `Medication/${r.medication}`]) {
      expect(keys).not.toContain(hidden);
    }
    const allergies = resolve(res.body, sectionByCode(res.body, '48765-2').entry[0].reference);
    expect(allergies.code.coding[0].code).toBe('no-allergy-info');
  });

  it('is a valid Bundle the server accepts to store, "no information" entries included', async () => {
    const p = api.newProject();
    const r = await patientWithRecords(p);
    const empty = await create(p, patientBody());
    for (const patient of [r.patient, empty]) {
      const document = (await summary(p, patient)).body;
      const stored = await p.post('/Bundle', document);
      expect(stored.status, stored.text).toBe(201);
    }
  });

  it("summarises HL7's R4 examples of Patient/example, each in its section, the shared Practitioner once", async () => {
    const p = api.newProject();
    const names = ['patient-example', 'practitioner-example', 'allergyintolerance-example', 'condition-example', 'immunization-example', 'observation-example'];
    const examples = names.map((name) => JSON.parse(readFileSync(new URL(`${name}.json`, R4_EXAMPLES), 'utf8')));
    // Ids are unique per server (and the PostgreSQL test database outlives a run): each example gets a new one, references follow.
    const ids = new Map(examples.map((example) => [`${example.resourceType}/${example.id}`, `${example.resourceType}/${randomUUID()}`]));
    for (const example of examples) {
      let text = JSON.stringify(example);
      for (const [old, renamed] of ids) text = text.replaceAll(`"${old}"`, `"${renamed}"`);
      const [type, id] = ids.get(`${example.resourceType}/${example.id}`)!.split('/');
      const put = await p.put(`/${type}/${id}`, { ...JSON.parse(text), id });
      expect(put.status, put.text).toBe(201);
    }
    const res = await summary(p, ids.get('Patient/example')!.split('/')[1]);
    expect(res.status, res.text).toBe(200);
    expect(sectionByCode(res.body, '48765-2').entry).toEqual([ref(ids.get('AllergyIntolerance/example')!)]);
    expect(sectionByCode(res.body, '48765-2').text.div).toContain('<td>Cashew nuts</td>');
    expect(sectionByCode(res.body, '11450-4').entry).toEqual([ref(ids.get('Condition/example')!)]);
    expect(sectionByCode(res.body, '11369-6').entry).toEqual([ref(ids.get('Immunization/example')!)]);
    expect(sectionByCode(res.body, '8716-3').entry).toEqual([ref(ids.get('Observation/example')!)]);
    expect(keysOf(res.body).filter((key) => key === ids.get('Practitioner/example'))).toHaveLength(1);
    expect((await p.post('/Bundle', res.body)).status).toBe(201);
  });

  it("gives a patient signed in with patient/ scopes its own summary, and no other patient's", async () => {
    const admin = api.newProject();
    const user = await patientUser(api, admin);
    const mine = await create(admin, { resourceType: 'Condition', code: { text: 'Asthma' }, subject: ref(`Patient/${user.patientId}`) });
    const other = await create(admin, patientBody());
    const { client } = await user.client('patient/*.rs launch/patient');
    const own = await summary(client, user.patientId);
    expect(own.status, own.text).toBe(200);
    expect(sectionByCode(own.body, '11450-4').entry).toEqual([ref(`Condition/${mine}`)]);
    expect(composition(own.body).author).toEqual([ref(`Patient/${user.patientId}`)]);
    expect((await summary(client, other)).status).toBe(404);
  });

  it('is 404 for a patient the caller cannot see', async () => {
    const p = api.newProject();
    const elsewhere = await create(api.newProject(), patientBody());
    const res = await summary(p, elsewhere);
    expect(res.status).toBe(404);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });

  it('answers POST like GET', async () => {
    const p = api.newProject();
    const patient = await create(p, patientBody());
    const res = await p.post(`/Patient/${patient}/$summary`, { resourceType: 'Parameters' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.type).toBe('document');
  });

  it('is the GraphQL field PatientSummary', async () => {
    const p = api.newProject();
    const patient = await create(p, patientBody());
    const result = await data(api, p, `{ PatientSummary(id: "${patient}") { type entry { resource { resourceType } } } }`);
    expect(result.PatientSummary.type).toBe('document');
    expect(result.PatientSummary.entry[0].resource.resourceType).toBe('Composition');
  });

  it('at type level summarises the one patient with the identifier given', async () => {
    const p = api.newProject();
    const mrn = randomUUID();
    const patient = await create(p, patientBody({ identifier: [{ system: 'http://example.org/mrn', value: mrn }] }));
    const res = await p.get(`/Patient/$summary?identifier=${encodeURIComponent(`http://example.org/mrn|${mrn}`)}`);
    expect(res.status, res.text).toBe(200);
    expect(composition(res.body).subject).toEqual(ref(`Patient/${patient}`));
  });

  it('at type level is 404 for an identifier no patient has, and 400 without one', async () => {
    const p = api.newProject();
    expect((await p.get(`/Patient/$summary?identifier=${randomUUID()}`)).status).toBe(404);
    const none = await p.get('/Patient/$summary');
    expect(none.status).toBe(400);
    expect(none.body.issue[0].details.text).toContain('needs identifier');
  });

  it('at type level is 400 when several patients have the identifier', async () => {
    const p = api.newProject();
    const mrn = randomUUID();
    for (let i = 0; i < 2; i++) await create(p, patientBody({ identifier: [{ system: 'http://example.org/mrn', value: mrn }] }));
    const res = await p.get(`/Patient/$summary?identifier=${mrn}`);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('Several patients');
  });
});
