import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { out, params } from './fixtures.js';

const api = await useTestServer();
const GENDER = 'http://hl7.org/fhir/administrative-gender';
const V2_SEX = 'http://terminology.hl7.org/CodeSystem/v2-0001';
const V3_GENDER = 'http://terminology.hl7.org/CodeSystem/v3-AdministrativeGender';
const TO_V2 = 'http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v2';
const TO_V3 = 'http://hl7.org/fhir/ConceptMap/cm-administrative-gender-v3';

const matches = (body: any): [string, string, string, string][] =>
  out(body, 'match').map((m: any) => {
    const part = (name: string) => m.part.find((p: any) => p.name === name);
    return [part('equivalence').valueCode, part('concept').valueCoding.system, part('concept').valueCoding.code, part('source').valueUri];
  });

describe('ConceptMap/$translate with the FHIR R4 concept maps shipped with the server', () => {
  it('translates by the url of a shipped map, by GET and POST alike, in a project that stores no map', async () => {
    const client = api.newProject();
    const get = await client.get(`/ConceptMap/$translate?url=${encodeURIComponent(TO_V2)}&system=${encodeURIComponent(GENDER)}&code=male`);
    expect(get.status, get.text).toBe(200);
    expect(out(get.body, 'result')).toEqual([{ name: 'result', valueBoolean: true }]);
    expect(matches(get.body)).toEqual([['equal', V2_SEX, 'M', TO_V2]]);
    const post = await client.post('/ConceptMap/$translate', params({ name: 'url', valueUri: TO_V2 }, { name: 'coding', valueCoding: { system: GENDER, code: 'male' } }));
    expect(post.body).toEqual(get.body);
  });

  it('searches every shipped map when no map is named', async () => {
    const client = api.newProject();
    const res = await client.get(`/ConceptMap/$translate?system=${encodeURIComponent(GENDER)}&code=female`);
    expect(res.status, res.text).toBe(200);
    expect(matches(res.body)).toEqual(
      expect.arrayContaining([
        ['equal', V2_SEX, 'F', TO_V2],
        ['equal', V3_GENDER, 'F', TO_V3],
      ]),
    );
  });

  it('narrows the shipped maps by target value set', async () => {
    const client = api.newProject();
    const target = encodeURIComponent('http://terminology.hl7.org/ValueSet/v3-AdministrativeGender');
    const res = await client.get(`/ConceptMap/$translate?system=${encodeURIComponent(GENDER)}&code=female&target=${target}`);
    expect(matches(res.body)).toEqual([['equal', V3_GENDER, 'F', TO_V3]]);
  });

  it('translates in reverse, from the target system back to the source', async () => {
    const client = api.newProject();
    const res = await client.get(`/ConceptMap/$translate?url=${encodeURIComponent(TO_V3)}&system=${encodeURIComponent(V3_GENDER)}&code=F&reverse=true`);
    expect(res.status, res.text).toBe(200);
    expect(matches(res.body)).toEqual([['equal', GENDER, 'female', TO_V3]]);
  });

  it('reverses the direction of wider and narrower mappings', async () => {
    const client = api.newProject();
    // cm-contact-point-use-v2: home is wider than PRN (primary residence number).
    const res = await client.get(
      `/ConceptMap/$translate?system=${encodeURIComponent('http://terminology.hl7.org/CodeSystem/v2-0201')}&code=PRN&reverse=true`,
    );
    expect(matches(res.body)).toEqual([['narrower', 'http://hl7.org/fhir/contact-point-use', 'home', 'http://hl7.org/fhir/ConceptMap/cm-contact-point-use-v2']]);
  });

  it('answers result false with a message when no shipped map has the code', async () => {
    const client = api.newProject();
    const res = await client.get(`/ConceptMap/$translate?system=${encodeURIComponent(GENDER)}&code=no-such-gender`);
    expect(res.status).toBe(200);
    expect(out(res.body, 'result')).toEqual([{ name: 'result', valueBoolean: false }]);
    expect(out(res.body, 'message')[0].valueString).toContain('no-such-gender');
  });

  it("uses the project's own map instead of a shipped map of the same url", async () => {
    const client = api.newProject();
    const created = await client.post('/ConceptMap', {
      resourceType: 'ConceptMap',
      url: TO_V2,
      status: 'active',
      group: [{ source: GENDER, target: V2_SEX, element: [{ code: 'male', target: [{ code: 'X', equivalence: 'inexact', comment: 'local override' }] }] }],
    });
    expect(created.status).toBe(201);
    const named = await client.get(`/ConceptMap/$translate?url=${encodeURIComponent(TO_V2)}&system=${encodeURIComponent(GENDER)}&code=male`);
    expect(matches(named.body)).toEqual([['inexact', V2_SEX, 'X', TO_V2]]);
    const all = await client.get(`/ConceptMap/$translate?system=${encodeURIComponent(GENDER)}&code=male&target=${encodeURIComponent('http://terminology.hl7.org/ValueSet/v2-0001')}`);
    expect(matches(all.body)).toEqual([]);
  });

  it('does not ship the experimental example maps of the specification', async () => {
    const client = api.newProject();
    const res = await client.get(`/ConceptMap/$translate?url=${encodeURIComponent('http://hl7.org/fhir/ConceptMap/101')}&system=x&code=y`);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].details.text).toContain('http://hl7.org/fhir/ConceptMap/101');
  });
});
