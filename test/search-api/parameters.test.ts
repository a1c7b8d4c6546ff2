import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { create, expectInvalid, found, matchIds, sorted } from './helpers.js';

const api = await useTestServer();

const patient = (extra: Record<string, unknown> = {}) => ({ resourceType: 'Patient', ...extra });
const observation = (extra: Record<string, unknown> = {}) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
  ...extra,
});

describe('string parameters', () => {
  it('match by prefix, ignoring case and accents', async () => {
    const p = api.newProject();
    const a = await create(p, patient({ name: [{ family: 'Élodie' }] }));
    await create(p, patient({ name: [{ family: 'Melodie' }] }));
    expect(await found(p, '/Patient?family=elo')).toEqual([a]);
    expect(await found(p, '/Patient?family=ÉLO')).toEqual([a]);
  });

  it('HumanName matches on any part (given, family, text, prefix)', async () => {
    const p = api.newProject();
    const a = await create(p, patient({ name: [{ family: 'Smith', given: ['Anna'], prefix: ['Dr'] }] }));
    expect(await found(p, '/Patient?name=ann')).toEqual([a]);
    expect(await found(p, '/Patient?name=smi')).toEqual([a]);
    expect(await found(p, '/Patient?name=dr')).toEqual([a]);
    expect(await found(p, '/Patient?name=mith')).toEqual([]);
  });

  it('Address matches on any part', async () => {
    const p = api.newProject();
    const a = await create(p, patient({ address: [{ line: ['1 Main St'], city: 'Springfield', postalCode: '12345' }] }));
    expect(await found(p, '/Patient?address=spring')).toEqual([a]);
    expect(await found(p, '/Patient?address=123')).toEqual([a]);
    expect(await found(p, '/Patient?address-city=spring')).toEqual([a]);
  });

  it(':exact matches the whole value, case and accents included', async () => {
    const p = api.newProject();
    const a = await create(p, patient({ name: [{ family: 'Élodie' }] }));
    await create(p, patient({ name: [{ family: 'Elodie' }] }));
    await create(p, patient({ name: [{ family: 'Élodies' }] }));
    expect(await found(p, '/Patient?family:exact=Élodie')).toEqual([a]);
  });

  it(':contains matches anywhere in the value', async () => {
    const p = api.newProject();
    const a = await create(p, patient({ name: [{ family: 'Hamilton' }] }));
    await create(p, patient({ name: [{ family: 'Jones' }] }));
    expect(await found(p, '/Patient?family:contains=MILT')).toEqual([a]);
  });

  it('LIKE wildcards in values are literal', async () => {
    const p = api.newProject();
    const a = await create(p, patient({ name: [{ family: 'a%b' }] }));
    await create(p, patient({ name: [{ family: 'axb' }] }));
    expect(await found(p, '/Patient?family=a%25')).toEqual([a]);
    expect(await found(p, '/Patient?family=a_')).toEqual([]);
  });
});

describe('token parameters', () => {
  it('code, system|code, |code and system|', async () => {
    const p = api.newProject();
    const withSystem = await create(p, patient({ identifier: [{ system: 'http://a', value: 'X1' }] }));
    const noSystem = await create(p, patient({ identifier: [{ value: 'X1' }] }));
    const other = await create(p, patient({ identifier: [{ system: 'http://b', value: 'X1' }] }));
    expect(await found(p, '/Patient?identifier=X1')).toEqual(sorted(withSystem, noSystem, other));
    expect(await found(p, '/Patient?identifier=http://a|X1')).toEqual([withSystem]);
    expect(await found(p, '/Patient?identifier=|X1')).toEqual([noSystem]);
    expect(await found(p, '/Patient?identifier=http://b|')).toEqual([other]);
  });

  it('codes are case-sensitive', async () => {
    const p = api.newProject();
    await create(p, patient({ identifier: [{ value: 'abc' }] }));
    expect(await found(p, '/Patient?identifier=ABC')).toEqual([]);
  });

  it('Coding and CodeableConcept', async () => {
    const p = api.newProject();
    const a = await create(p, observation());
    await create(p, observation({ code: { coding: [{ system: 'http://loinc.org', code: '1234-5' }] } }));
    expect(await found(p, '/Observation?code=http://loinc.org|8867-4')).toEqual([a]);
  });

  it('boolean and code values', async () => {
    const p = api.newProject();
    const a = await create(p, patient({ active: true, gender: 'female' }));
    const b = await create(p, patient({ active: false, gender: 'male' }));
    expect(await found(p, '/Patient?active=true')).toEqual([a]);
    expect(await found(p, '/Patient?gender=male')).toEqual([b]);
  });

  it('ContactPoint values (phone, email)', async () => {
    const p = api.newProject();
    const a = await create(p, patient({ telecom: [{ system: 'email', value: 'a@example.org' }] }));
    expect(await found(p, '/Patient?email=a@example.org')).toEqual([a]);
    expect(await found(p, '/Patient?phone=a@example.org')).toEqual([]);
  });

  it(':not excludes resources with the code, keeps those without any', async () => {
    const p = api.newProject();
    const female = await create(p, patient({ gender: 'female' }));
    await create(p, patient({ gender: 'male' }));
    const none = await create(p, patient());
    expect(await found(p, '/Patient?gender:not=male')).toEqual(sorted(female, none));
  });

  it(':text matches display text by word prefix', async () => {
    const p = api.newProject();
    const a = await create(p, observation({ code: { coding: [{ system: 'http://loinc.org', code: '8867-4', display: 'Heart rate' }] } }));
    await create(p, observation({ code: { text: 'Body weight' } }));
    expect(await found(p, '/Observation?code:text=rate')).toEqual([a]);
    expect(await found(p, '/Observation?code:text=HEART')).toEqual([a]);
  });

  it(':missing=true and :missing=false', async () => {
    const p = api.newProject();
    const withGender = await create(p, patient({ gender: 'other' }));
    const without = await create(p, patient());
    expect(await found(p, '/Patient?gender:missing=true')).toEqual([without]);
    expect(await found(p, '/Patient?gender:missing=false')).toEqual([withGender]);
  });

  it(':missing=true counts exactly, leaving out deleted resources, those with the code and other projects', async () => {
    const p = api.newProject();
    const other = api.newProject();
    await create(p, patient({ gender: 'other' }));
    await create(p, patient({ birthDate: '2000-01-01' }));
    await create(p, patient());
    expect((await p.delete(`/Patient/${await create(p, patient())}`)).status).toBe(200);
    await create(other, patient());
    const res = await p.get('/Patient?gender:missing=true&_total=accurate&_count=1');
    expect(res.body.total).toBe(2);
    expect((await p.get('/Patient?gender:missing=true&_total=accurate&_count=1&_project=elsewhere')).body.total).toBe(0);
  });
});

describe('date parameters', () => {
  const born = async () => {
    const p = api.newProject();
    const ids = {
      y1999: await create(p, patient({ birthDate: '1999-12-31' })),
      d2000: await create(p, patient({ birthDate: '2000-01-01' })),
      m2000: await create(p, patient({ birthDate: '2000-06-15' })),
      y2001: await create(p, patient({ birthDate: '2001-01-01' })),
    };
    return { p, ...ids };
  };

  it('a partial date is a range: eq2000 matches every day of 2000', async () => {
    const { p, d2000, m2000 } = await born();
    expect(await found(p, '/Patient?birthdate=2000')).toEqual(sorted(d2000, m2000));
    expect(await found(p, '/Patient?birthdate=2000-06')).toEqual([m2000]);
    expect(await found(p, '/Patient?birthdate=eq2000-01-01')).toEqual([d2000]);
  });

  it('ne, gt, lt, ge, le', async () => {
    const { p, y1999, d2000, m2000, y2001 } = await born();
    expect(await found(p, '/Patient?birthdate=ne2000')).toEqual(sorted(y1999, y2001));
    expect(await found(p, '/Patient?birthdate=gt2000')).toEqual([y2001]);
    expect(await found(p, '/Patient?birthdate=lt2000')).toEqual([y1999]);
    expect(await found(p, '/Patient?birthdate=ge2000-06')).toEqual(sorted(m2000, y2001));
    expect(await found(p, '/Patient?birthdate=le2000-01-01')).toEqual(sorted(y1999, d2000));
  });

  it('sa and eb', async () => {
    const { p, y1999, y2001 } = await born();
    expect(await found(p, '/Patient?birthdate=sa2000')).toEqual([y2001]);
    expect(await found(p, '/Patient?birthdate=eb2000')).toEqual([y1999]);
  });

  it('ap matches values near the given one', async () => {
    const p = api.newProject();
    const near = await create(p, patient({ birthDate: '2020-01-10' }));
    await create(p, patient({ birthDate: '1950-01-01' }));
    expect(await found(p, '/Patient?birthdate=ap2020-01-01')).toEqual([near]);
  });

  it('repeated parameters are AND: a range between two dates', async () => {
    const { p, d2000, m2000 } = await born();
    expect(await found(p, '/Patient?birthdate=ge2000-01-01&birthdate=lt2001-01-01')).toEqual(sorted(d2000, m2000));
  });

  it('Period values are compared as ranges', async () => {
    const p = api.newProject();
    const open = await create(p, { resourceType: 'Encounter', status: 'in-progress', class: { code: 'AMB' }, period: { start: '2024-03-01' } });
    const closed = await create(p, {
      resourceType: 'Encounter',
      status: 'finished',
      class: { code: 'AMB' },
      period: { start: '2024-01-01T10:00:00Z', end: '2024-01-01T11:00:00Z' },
    });
    expect(await found(p, '/Encounter?date=gt2024-06-01')).toEqual([open]);
    expect(await found(p, '/Encounter?date=2024-01-01')).toEqual([closed]);
    expect(await found(p, '/Encounter?date=lt2024-02')).toEqual([closed]);
  });

  it('dateTimes with time zones', async () => {
    const p = api.newProject();
    const a = await create(p, observation({ effectiveDateTime: '2024-03-05T23:30:00-02:00' }));
    expect(await found(p, '/Observation?date=2024-03-06')).toEqual([a]);
    expect(await found(p, '/Observation?date=2024-03-05')).toEqual([]);
    expect(await found(p, '/Observation?date=ge2024-03-06T01:00:00Z')).toEqual([a]);
  });

  it('a malformed date gives 400 naming the parameter', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Patient?birthdate=2024-13'), 'birthdate');
    expectInvalid(await p.get('/Patient?birthdate=xx2024'), 'birthdate');
  });

  it('year 0000 is no FHIR date: 400 naming the parameter, with any prefix and in a composite', async () => {
    const p = api.newProject();
    for (const query of ['/Patient?birthdate=0000', '/Observation?date=lt0000-06', '/Observation?code-value-date=8867-4$ge0000']) {
      const res = await p.get(query);
      expectInvalid(res, '0000');
      expect(res.body.issue[0].expression).toEqual([query.slice(query.indexOf('?') + 1, query.indexOf('='))]);
    }
  });

  it('dateTimes whose time zone carries them out of years 0001-9999 are stored and found', async () => {
    const p = api.newProject();
    // 0000-12-31T10:00Z and 10000-01-01T13:59:59Z in UTC.
    const first = await create(p, observation({ effectiveDateTime: '0001-01-01T00:00:00+14:00' }));
    const last = await create(p, observation({ effectiveDateTime: '9999-12-31T23:59:59-14:00' }));
    expect(await found(p, '/Observation?date=lt0001-01-02')).toEqual([first]);
    expect(await found(p, '/Observation?date=ge9999-12-31')).toEqual([last]);
    expect(await found(p, '/Observation?date=le0001-01-01T00:00:00%2B14:00')).toEqual([first]);
    expect(await found(p, '/Observation?date=ge9999-12-31T23:59:59-14:00')).toEqual([last]);
  });
});

describe('number and quantity parameters', () => {
  const riskAssessment = (probability: number) => ({
    resourceType: 'RiskAssessment',
    status: 'final',
    subject: { reference: 'Patient/x' },
    prediction: [{ probabilityDecimal: probability }],
  });

  it('numbers with implicit precision and prefixes', async () => {
    const p = api.newProject();
    const low = await create(p, riskAssessment(0.2));
    const mid = await create(p, riskAssessment(0.5));
    const high = await create(p, riskAssessment(0.82));
    expect(await found(p, '/RiskAssessment?probability=0.5')).toEqual([mid]);
    expect(await found(p, '/RiskAssessment?probability=0.8')).toEqual([high]);
    expect(await found(p, '/RiskAssessment?probability=gt0.5')).toEqual([high]);
    expect(await found(p, '/RiskAssessment?probability=le0.5')).toEqual(sorted(low, mid));
    expect(await found(p, '/RiskAssessment?probability=ne0.5')).toEqual(sorted(low, high));
  });

  it('a malformed number gives 400', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/RiskAssessment?probability=gtabc'), 'probability');
  });

  it('quantities: value, value|system|code, value||code', async () => {
    const p = api.newProject();
    const kg = await create(p, observation({ valueQuantity: { value: 70, unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg' } }));
    const lb = await create(p, observation({ valueQuantity: { value: 70, unit: 'lb', system: 'http://unitsofmeasure.org', code: '[lb_av]' } }));
    await create(p, observation({ valueQuantity: { value: 90, unit: 'kg', system: 'http://unitsofmeasure.org', code: 'kg' } }));
    expect(await found(p, '/Observation?value-quantity=70')).toEqual(sorted(kg, lb));
    expect(await found(p, '/Observation?value-quantity=70|http://unitsofmeasure.org|kg')).toEqual([kg]);
    expect(await found(p, '/Observation?value-quantity=lt80||[lb_av]')).toEqual([lb]);
    expect(await found(p, '/Observation?value-quantity=gt80')).toHaveLength(1);
  });
});

describe('reference parameters', () => {
  it('Type/id, id, absolute URL and :Type', async () => {
    const p = api.newProject();
    const pat = await create(p, patient());
    const group = await create(p, { resourceType: 'Group', type: 'person', actual: true });
    const a = await create(p, observation({ subject: { reference: `Patient/${pat}` } }));
    const b = await create(p, observation({ subject: { reference: `Group/${group}` } }));
    expect(await found(p, `/Observation?subject=Patient/${pat}`)).toEqual([a]);
    expect(await found(p, `/Observation?subject=${pat}`)).toEqual([a]);
    expect(await found(p, `/Observation?subject=${encodeURIComponent(`${api.fhir.replace(/http:\/\/127\.0\.0\.1:\d+/, 'http://localhost')}/Patient/${pat}`)}`)).toEqual([a]);
    expect(await found(p, `/Observation?subject:Group=${group}`)).toEqual([b]);
    expect(await found(p, `/Observation?subject:Patient=${group}`)).toEqual([]);
  });

  it('an external absolute reference matches by URL', async () => {
    const p = api.newProject();
    const a = await create(p, observation({ subject: { reference: 'http://other.org/fhir/Patient/9' } }));
    expect(await found(p, `/Observation?subject=${encodeURIComponent('http://other.org/fhir/Patient/9')}`)).toEqual([a]);
  });

  it('comma-separated references are OR', async () => {
    const p = api.newProject();
    const a = await create(p, observation({ subject: { reference: 'Patient/p1' } }));
    const b = await create(p, observation({ subject: { reference: 'Patient/p2' } }));
    await create(p, observation({ subject: { reference: 'Patient/p3' } }));
    expect(await found(p, '/Observation?subject=Patient/p1,Patient/p2')).toEqual(sorted(a, b));
  });
});

describe('uri parameters', () => {
  const valueSet = (url: string) => ({ resourceType: 'ValueSet', status: 'active', url });

  it('exact, :below and :above', async () => {
    const p = api.newProject();
    const root = await create(p, valueSet('http://acme.org/fhir'));
    const child = await create(p, valueSet('http://acme.org/fhir/ValueSet/a'));
    await create(p, valueSet('http://other.org/fhir'));
    expect(await found(p, '/ValueSet?url=http://acme.org/fhir')).toEqual([root]);
    expect(await found(p, '/ValueSet?url:below=http://acme.org/fhir')).toEqual(sorted(root, child));
    expect(await found(p, '/ValueSet?url:above=http://acme.org/fhir/ValueSet/a/b')).toEqual(sorted(root, child));
  });
});

describe('common parameters', () => {
  it('_id, with commas as OR', async () => {
    const p = api.newProject();
    const a = await create(p, patient());
    const b = await create(p, patient());
    await create(p, patient());
    expect(await found(p, `/Patient?_id=${a},${b}`)).toEqual(sorted(a, b));
  });

  it('_lastUpdated with prefixes', async () => {
    const p = api.newProject();
    const a = await create(p, patient());
    expect(await found(p, '/Patient?_lastUpdated=gt2000-01-01')).toEqual([a]);
    expect(await found(p, '/Patient?_lastUpdated=lt2000-01-01')).toEqual([]);
  });

  it('_tag, _security, _profile and _source', async () => {
    const p = api.newProject();
    const a = await create(
      p,
      patient({
        meta: {
          tag: [{ system: 'http://t', code: 'vip' }],
          security: [{ system: 'http://terminology.hl7.org/CodeSystem/v3-Confidentiality', code: 'R' }],
          profile: ['http://example.org/StructureDefinition/p'],
          source: 'http://example.org/source',
        },
      }),
    );
    await create(p, patient());
    expect(await found(p, '/Patient?_tag=http://t|vip')).toEqual([a]);
    expect(await found(p, '/Patient?_security=R')).toEqual([a]);
    expect(await found(p, '/Patient?_profile=http://example.org/StructureDefinition/p')).toEqual([a]);
    expect(await found(p, '/Patient?_source=http://example.org/source')).toEqual([a]);
  });

  it('_project narrows to a project; another project gives nothing', async () => {
    const p = api.newProject();
    const a = await create(p, patient());
    expect(await found(p, `/Patient?_project=${p.projectId}`)).toEqual([a]);
    expect(await found(p, '/Patient?_project=someone-else')).toEqual([]);
  });

  it('a super admin sees every project; _project narrows to one', async () => {
    const p = api.newProject();
    const q = api.newProject();
    const a = await create(p, patient({ name: [{ family: 'Zebedee' }] }));
    const b = await create(q, patient({ name: [{ family: 'Zebedee' }] }));
    expect(await found(api.superAdmin, '/Patient?family:exact=Zebedee')).toEqual(expect.arrayContaining([a, b]));
    expect(await found(api.superAdmin, `/Patient?family:exact=Zebedee&_project=${q.projectId}`)).toEqual([b]);
  });

  it('a search never sees other projects', async () => {
    const p = api.newProject();
    const q = api.newProject();
    await create(q, patient({ name: [{ family: 'Hidden' }] }));
    expect(await found(p, '/Patient?family=hidden')).toEqual([]);
  });

  it('deleted resources are not found', async () => {
    const p = api.newProject();
    const a = await create(p, patient({ name: [{ family: 'Gone' }] }));
    expect((await p.delete(`/Patient/${a}`)).status).toBe(200);
    expect(await found(p, '/Patient?family=gone')).toEqual([]);
  });

  it('updated resources are found by their new values only', async () => {
    const p = api.newProject();
    const a = await create(p, patient({ name: [{ family: 'Before' }] }));
    expect((await p.put(`/Patient/${a}`, patient({ id: a, name: [{ family: 'After' }] }))).status).toBe(200);
    expect(await found(p, '/Patient?family=before')).toEqual([]);
    expect(await found(p, '/Patient?family=after')).toEqual([a]);
  });

  it('different parameters combine as AND, commas as OR', async () => {
    const p = api.newProject();
    const a = await create(p, patient({ gender: 'female', name: [{ family: 'Ames' }] }));
    const b = await create(p, patient({ gender: 'male', name: [{ family: 'Ames' }] }));
    await create(p, patient({ gender: 'male', name: [{ family: 'Bell' }] }));
    expect(await found(p, '/Patient?family=ames&gender=female')).toEqual([a]);
    expect(await found(p, '/Patient?family=ames&gender=female,male')).toEqual(sorted(a, b));
  });
});

describe('errors and lenient handling', () => {
  it('an unknown parameter gives 400 naming it', async () => {
    const p = api.newProject();
    const res = await p.get('/Patient?nonsense=1');
    expectInvalid(res, 'nonsense');
    expect(res.body.issue[0].expression).toEqual(['nonsense']);
  });

  it('an unknown modifier gives 400', async () => {
    const p = api.newProject();
    expectInvalid(await p.get('/Patient?family:bogus=x'), 'bogus');
  });

  it('an unknown resource type gives 404 not-supported', async () => {
    const p = api.newProject();
    const res = await p.get('/Nonsense?x=1');
    expect(res.status).toBe(404);
    expect(res.body.issue[0].code).toBe('not-supported');
  });

  it('with Prefer: handling=lenient, unknown parameters are ignored and reported as an outcome entry', async () => {
    const p = api.newProject();
    const a = await create(p, patient({ gender: 'female' }));
    const res = await p.get('/Patient?nonsense=1&gender=female&birthdate=notadate', { Prefer: 'handling=lenient' });
    expect(matchIds(res)).toEqual([a]);
    const outcome = res.body.entry.find((e: any) => e.search.mode === 'outcome');
    expect(outcome.resource.resourceType).toBe('OperationOutcome');
    const texts = outcome.resource.issue.map((i: any) => i.details.text).join(' ');
    expect(texts).toContain('nonsense');
    expect(texts).toContain('birthdate');
    expect(res.body.link.find((l: any) => l.relation === 'self').url).not.toContain('nonsense');
  });
});

describe('system search _type', () => {
  it('refuses a _type that names no type (empty, or commas only) with 400, rather than searching every type', async () => {
    const p = api.newProject();
    await create(p, patient());
    for (const value of ['', ',', '%20,%20']) {
      const res = await p.get(`?_type=${value}`);
      expectInvalid(res, '_type names no resource type');
      expect(res.body.issue[0].expression).toEqual(['_type']);
    }
    expect(matchIds(await p.get('?_type=Patient,'))).toHaveLength(1);
  });
});
