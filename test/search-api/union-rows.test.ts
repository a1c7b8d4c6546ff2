import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, createInBatches, found, matchesByOffset, matchIds, sorted } from './helpers.js';

/**
 * A parameter whose values are the union of other parameters' values (Patient `name`: `family`,
 * `given` and a name's text, prefix and suffix; `telecom`: `phone`, `email` and the ContactPoints
 * of other systems; Observation `combo-code`: `code` and `component-code`) stores rows only for the values no other parameter holds, and is searched,
 * sorted and chained through from the rows of every code it reads (src/indexing/union-rows.ts).
 * Rows written before (a `name` row for every part) answer the same.
 */
const api = await useTestServer();

const ann = {
  resourceType: 'Patient',
  name: [
    { text: 'Dr Ann Quill', prefix: ['Dr'], given: ['Ann', 'Beth'], family: 'Quill', suffix: ['PhD'] },
    { given: ['Zoe'], family: 'Ortega' },
  ],
  address: [{ text: '1 Elm Road, Oxford', line: ['1 Elm Road'], district: 'Cherwell', city: 'Oxford', state: 'Oxon', postalCode: 'OX1 2AB', country: 'UK' }],
};

const observation = (code: string, components: string[] = [], value?: number) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { coding: [{ system: 'http://loinc.org', code }] },
  ...(value !== undefined && { valueQuantity: { value, unit: 'mg', system: 'http://unitsofmeasure.org', code: 'mg' } }),
  ...(components.length > 0 && {
    component: components.map((c, i) => ({
      code: { coding: [{ system: 'http://loinc.org', code: c }] },
      valueQuantity: { value: 100 + i, unit: 'mm[Hg]', system: 'http://unitsofmeasure.org', code: 'mm[Hg]' },
    })),
  }),
});

async function stringRows(id: string): Promise<string[]> {
  const rows = await api.server.services.db.query<{ code: string; value: string }>(
    `SELECT code, value FROM string_index WHERE "resourceId" = $1 AND code IN ('name', 'address') ORDER BY code, value`,
    [id],
  );
  return rows.map((row) => `${row.code}=${row.value}`);
}

/** Adds string rows under `code` to a resource, as a database written before union parameters holds them. */
async function addOldRows(id: string, code: string, values: string[]): Promise<void> {
  for (const [i, value] of values.entries()) {
    await api.server.services.db.query(
      `INSERT INTO string_index ("projectId", "resourceType", "resourceId", seq, code, value, exact)` +
        ` SELECT "projectId", "resourceType", id, $2, $3, $4, $5 FROM resource WHERE id = $1`,
      [id, 1000 + i, code, value.toLowerCase(), value],
    );
  }
}

describe('union parameters: what a write stores', () => {
  it('stores name and address rows only for the parts no other parameter holds, and no combo-code rows', async () => {
    const p = api.newProject();
    const id = await create(p, ann);
    expect(await stringRows(id)).toEqual(['address=1 elm road', 'address=1 elm road, oxford', 'address=cherwell', 'name=dr', 'name=dr ann quill', 'name=phd']);
    const obs = await create(p, observation('8480-6', ['8462-4']));
    const tokens = await api.server.services.db.query<{ code: string }>(`SELECT DISTINCT code FROM token_index WHERE "resourceId" = $1 AND code LIKE 'combo-%'`, [obs]);
    expect(tokens).toEqual([]);
  });
});

const reachable = {
  resourceType: 'Patient',
  telecom: [
    { system: 'phone', value: '+44 1865 000111' },
    { system: 'email', value: 'ann@example.org' },
    { system: 'fax', value: '+44 1865 000999' },
    { system: 'pager', value: 'pager-17' },
  ],
};

async function tokenRows(id: string, code: string): Promise<string[]> {
  const rows = await api.server.services.db.query<{ value: string }>(`SELECT value FROM token_index WHERE "resourceId" = $1 AND code = $2 ORDER BY value`, [id, code]);
  return rows.map((row) => row.value);
}

describe('union parameters: telecom', () => {
  it('stores telecom rows only for ContactPoints of systems no other parameter holds', async () => {
    const p = api.newProject();
    const id = await create(p, reachable);
    expect(await tokenRows(id, 'telecom')).toEqual(['+44 1865 000999', 'pager-17']);
    expect(await tokenRows(id, 'phone')).toEqual(['+44 1865 000111']);
    expect(await tokenRows(id, 'email')).toEqual(['ann@example.org']);
  });

  it('finds telecom by a value of any system, with missing, not and sorts', async () => {
    const p = api.newProject();
    const a = await create(p, reachable);
    const b = await create(p, { resourceType: 'Patient', telecom: [{ system: 'email', value: 'bo@example.org' }] });
    const c = await create(p, { resourceType: 'Patient', gender: 'other' });
    expect(await found(p, '/Patient?telecom=%2B44 1865 000111')).toEqual([a]);
    expect(await found(p, '/Patient?telecom=bo@example.org,pager-17')).toEqual(sorted(a, b));
    expect(await found(p, '/Patient?telecom=%2B44 1865 000999')).toEqual([a]);
    expect(await found(p, '/Patient?phone=%2B44 1865 000999')).toEqual([]);
    expect(await found(p, '/Patient?telecom:missing=true')).toEqual([c]);
    expect(await found(p, '/Patient?telecom:missing=false')).toEqual(sorted(a, b));
    expect(await found(p, '/Patient?telecom:not=ann@example.org')).toEqual(sorted(b, c));
    // Least value: a '+44 1865 000111', b 'bo@example.org'; greatest: a 'pager-17'.
    expect(matchIds(await p.get('/Patient?_sort=telecom'))).toEqual([a, b, c]);
    expect(matchIds(await p.get('/Patient?_sort=-telecom'))).toEqual([a, b, c]);
    expect((await p.get('/Patient?telecom=ann@example.org,bo@example.org&_total=accurate')).body.total).toBe(2);
  });

  it('answers the same on telecom rows written before for every system', async () => {
    const p = api.newProject();
    const a = await create(p, reachable);
    await api.server.services.db.query(
      `INSERT INTO token_index ("projectId", "resourceType", "resourceId", seq, code, value)` +
        ` SELECT "projectId", "resourceType", id, 1000 + n, 'telecom', v FROM resource, unnest($2::text[]) WITH ORDINALITY AS u(v, n) WHERE id = $1`,
      [a, ['+44 1865 000111', 'ann@example.org']],
    );
    expect(matchIds(await p.get('/Patient?telecom=ann@example.org'))).toEqual([a]);
    expect((await p.get('/Patient?telecom=ann@example.org,%2B44 1865 000111&_total=accurate')).body.total).toBe(1);
  });
});

describe('union parameters: searches', () => {
  async function people(p: ProjectClient) {
    const a = await create(p, ann);
    const b = await create(p, { resourceType: 'Patient', name: [{ family: 'Quinn', given: ['Ada'] }], address: [{ city: 'Leeds', line: ['9 Oak Lane'] }] });
    const c = await create(p, { resourceType: 'Patient', name: [{ text: 'Mx Rowan' }] });
    const d = await create(p, { resourceType: 'Patient', gender: 'other' });
    return { a, b, c, d };
  }

  it('finds a name by any part, with each modifier', async () => {
    const p = api.newProject();
    const { a, b, c, d } = await people(p);
    expect(await found(p, '/Patient?name=qui')).toEqual(sorted(a, b));
    expect(await found(p, '/Patient?name=zo')).toEqual([a]);
    expect(await found(p, '/Patient?name=phd')).toEqual([a]);
    expect(await found(p, '/Patient?name=dr')).toEqual([a]);
    expect(await found(p, '/Patient?name=mx')).toEqual([c]);
    expect(await found(p, '/Patient?name=ada,mx')).toEqual(sorted(b, c));
    expect(await found(p, '/Patient?name:exact=Beth')).toEqual([a]);
    expect(await found(p, '/Patient?name:exact=beth')).toEqual([]);
    expect(await found(p, '/Patient?name:exact=Dr Ann Quill')).toEqual([a]);
    expect(await found(p, '/Patient?name:contains=TEG')).toEqual([a]);
    expect(await found(p, '/Patient?name:contains=owa')).toEqual([c]);
    expect(await found(p, '/Patient?name:missing=true')).toEqual([d]);
    expect(await found(p, '/Patient?name:missing=false')).toEqual(sorted(a, b, c));
    expect(await found(p, '/Patient?name=qui&name=ada')).toEqual([b]);
  });

  it('finds an address by any part, with each modifier', async () => {
    const p = api.newProject();
    const { a, b, c, d } = await people(p);
    expect(await found(p, '/Patient?address=oxf')).toEqual([a]);
    expect(await found(p, '/Patient?address=cherw')).toEqual([a]);
    expect(await found(p, '/Patient?address=9 oak')).toEqual([b]);
    expect(await found(p, '/Patient?address=ox1')).toEqual([a]);
    expect(await found(p, '/Patient?address:exact=Leeds')).toEqual([b]);
    expect(await found(p, '/Patient?address:contains=lane')).toEqual([b]);
    expect(await found(p, '/Patient?address:missing=true')).toEqual(sorted(c, d));
    expect(await found(p, '/Patient?address-city=leeds')).toEqual([b]);
  });

  it('sorts by the least value of any part ascending and the greatest descending', async () => {
    const p = api.newProject();
    const { a, b, c, d } = await people(p);
    // Least name: a 'ann', b 'ada', c 'mx rowan'; greatest: a 'zoe', b 'quinn'. Least address: a '1 elm road', b '9 oak lane'.
    expect(matchIds(await p.get('/Patient?_sort=name'))).toEqual([b, a, c, d]);
    expect(matchIds(await p.get('/Patient?_sort=-name'))).toEqual([a, b, c, d]);
    expect(matchIds(await p.get('/Patient?_sort=address'))).toEqual([a, b, ...sorted(c, d)]);
    expect(matchIds(await p.get('/Patient?_sort=-address&gender=other'))).toEqual([d]);
  });

  it('pages a prefix match and a sort through more resources than one window, in order', async () => {
    const p = api.newProject();
    const names = Array.from({ length: 60 }, (_, i) => {
      const tag = String(i).padStart(2, '0');
      // Each resource's least value comes from a different part in turn.
      const name = i % 3 === 0 ? { family: `Sm${tag}`, given: ['Zz'] } : i % 3 === 1 ? { family: 'Zz', given: [`Sm${tag}`] } : { family: 'Zz', prefix: [`Sm${tag}`] };
      return { resourceType: 'Patient', name: [name] };
    });
    const ids = await createInBatches(p, names);
    const prefixed = await matchesByOffset(p, '/Patient?name=sm', 7, 60);
    expect([...prefixed].sort()).toEqual(sorted(...ids));
    expect(await matchesByOffset(p, '/Patient?_sort=name', 7, 60)).toEqual(ids);
    expect(await matchesByOffset(p, '/Patient?_sort=-name', 7, 60)).toEqual(sorted(...ids));
  });

  it('chains and reverse-chains through a union parameter', async () => {
    const p = api.newProject();
    const { a, b } = await people(p);
    const o1 = await create(p, { ...observation('8480-6'), subject: { reference: `Patient/${a}` } });
    await create(p, { ...observation('1111-1', ['8480-6']), subject: { reference: `Patient/${b}` } });
    expect(await found(p, '/Observation?subject:Patient.name=beth')).toEqual([o1]);
    expect(await found(p, '/Observation?subject:Patient.address=cherw')).toEqual([o1]);
    expect(await found(p, '/Patient?_has:Observation:subject:combo-code=8480-6')).toEqual(sorted(a, b));
    expect(await found(p, '/Patient?_has:Observation:subject:combo-code=1111-1')).toEqual([b]);
  });

  it('searches Person, which has no family or given, together with Patient', async () => {
    const p = api.newProject();
    const { a } = await people(p);
    const person = await create(p, { resourceType: 'Person', name: [{ family: 'Quiller' }] });
    expect(await found(p, '/Person?name=quil')).toEqual([person]);
    expect(await found(p, '?_type=Patient,Person&name=quil')).toEqual(sorted(a, person));
    expect(await found(p, '?_type=Patient,Person&address=oxf')).toEqual([a]);
  });

  it('finds combo codes and quantities in the code or a component, with modifiers and sorts', async () => {
    const p = api.newProject();
    const plain = await create(p, observation('8480-6', [], 3));
    const panel = await create(p, observation('85354-9', ['8480-6', '8462-4']));
    const none = await create(p, { resourceType: 'Observation', status: 'final', code: { text: 'note' } });
    expect(await found(p, '/Observation?combo-code=8480-6')).toEqual(sorted(plain, panel));
    expect(await found(p, '/Observation?combo-code=http://loinc.org|8462-4')).toEqual([panel]);
    expect(await found(p, '/Observation?combo-code:text=note')).toEqual([none]);
    expect(await found(p, '/Observation?combo-code:missing=true')).toEqual([]);
    expect(await found(p, '/Observation?combo-value-quantity=gt50')).toEqual([panel]);
    expect(await found(p, '/Observation?combo-value-quantity=lt50')).toEqual([plain]);
    expect(await found(p, '/Observation?combo-value-quantity:missing=true')).toEqual([none]);
    expect(matchIds(await p.get('/Observation?_sort=combo-value-quantity'))).toEqual([plain, panel, none]);
    expect(matchIds(await p.get('/Observation?_sort=-combo-value-quantity'))).toEqual([panel, plain, none]);
    expect(matchIds(await p.get('/Observation?combo-code=8480-6&_count=1'))).toHaveLength(1);
  });

  it('answers the same on rows written before: a value under two codes is one match, and sorts the same', async () => {
    const p = api.newProject();
    const { a, b, c, d } = await people(p);
    await addOldRows(a, 'name', ['Ann', 'Beth', 'Quill', 'Zoe', 'Ortega']);
    await addOldRows(b, 'name', ['Quinn', 'Ada']);
    expect(matchIds(await p.get('/Patient?name=qui'))).toHaveLength(2);
    expect(await found(p, '/Patient?name=qui')).toEqual(sorted(a, b));
    expect(await found(p, '/Patient?name:exact=Zoe')).toEqual([a]);
    expect(matchIds(await p.get('/Patient?_sort=name'))).toEqual([b, a, c, d]);
    expect(matchIds(await p.get('/Patient?_sort=-name'))).toEqual([a, b, c, d]);
    expect(await matchesByOffset(p, '/Patient?name=q&_sort=name', 1, 2)).toEqual([b, a]);
    expect((await p.get('/Patient?name=qui&_total=accurate')).body.total).toBe(2);
  });

  it('is read by GraphQL list searches', async () => {
    const p = api.newProject();
    const { a } = await people(p);
    const res = await api.raw('/fhir/R4/$graphql', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(await p.authHeaders()) },
      body: JSON.stringify({ query: '{ PatientList(name: "beth") { id } }' }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: unknown }).data).toEqual({ PatientList: [{ id: a }] });
  });
});
