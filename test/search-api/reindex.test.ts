import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { create, found } from './helpers.js';

/** `$reindex` (super admins): rebuilds index rows from stored content, without new versions. */

const api = await useTestServer();

type Json = any;

const INDEX_TABLES = ['token_index', 'string_index', 'date_index', 'number_index', 'quantity_index', 'reference_index', 'uri_index', 'composite_index'];

/** Removes every index row of a resource, as if it had been written before its rows existed (before migration 0005). */
async function dropIndexRows(resourceType: string, id: string): Promise<void> {
  for (const table of INDEX_TABLES) {
    await api.server.services.db.execute(`DELETE FROM ${table} WHERE "resourceType" = $1 AND "resourceId" = $2`, [resourceType, id]);
  }
}

function parameters(...parameter: Json[]): Json {
  return { resourceType: 'Parameters', parameter };
}

async function runReindex(client: ProjectClient, ...parameter: Json[]) {
  return client.post('/$reindex', parameters(...parameter));
}

const LOINC = 'http://loinc.org';
const bloodPressure = (subject: string) => ({
  resourceType: 'Observation',
  status: 'final',
  code: { coding: [{ system: LOINC, code: '85354-9' }] },
  subject: { reference: `Patient/${subject}`, identifier: { system: 'http://example.org/mrn', value: `mrn-${subject}` } },
  component: [{ code: { coding: [{ system: LOINC, code: '8480-6' }] }, valueQuantity: { value: 150, system: 'http://unitsofmeasure.org', code: 'mm[Hg]' } }],
});

describe('$reindex', () => {
  it('is refused (403) to a project admin', async () => {
    const p = api.newProject();
    const res = await runReindex(p, { name: 'project', valueString: p.projectId });
    expect(res.status, res.text).toBe(403);
    expect(res.body.issue[0].code).toBe('forbidden');
  });

  it('restores the composite and :identifier rows of a resource that lost them', async () => {
    const p = api.newProject();
    const subject = await create(p, { resourceType: 'Patient' });
    const obs = await create(p, bloodPressure(subject));
    await dropIndexRows('Observation', obs);
    const composite = `/Observation?component-code-value-quantity=${LOINC}|8480-6$gt140`;
    const identifier = `/Observation?subject:identifier=http://example.org/mrn|mrn-${subject}`;
    expect(await found(p, composite)).toEqual([]);
    expect(await found(p, identifier)).toEqual([]);

    const res = await runReindex(api.superAdmin, { name: 'project', valueString: p.projectId });
    expect(res.status, res.text).toBe(200);
    expect(await found(p, composite)).toEqual([obs]);
    expect(await found(p, identifier)).toEqual([obs]);
    expect(await found(p, `/Observation?code=${LOINC}|85354-9`)).toEqual([obs]);
  });

  it('reports the resources reindexed, per type', async () => {
    const p = api.newProject();
    const subject = await create(p, { resourceType: 'Patient' });
    await create(p, bloodPressure(subject));
    await create(p, bloodPressure(subject));
    const res = await runReindex(api.superAdmin, { name: 'project', valueString: p.projectId }, { name: 'type', valueCode: 'Observation' });
    expect(res.status, res.text).toBe(200);
    expect(res.body.resourceType).toBe('Parameters');
    const byName = (name: string) => res.body.parameter.filter((entry: Json) => entry.name === name);
    expect(byName('resources')[0].valueInteger).toBe(2);
    expect(byName('byType').map((entry: Json) => entry.part)).toEqual([
      [
        { name: 'type', valueCode: 'Observation' },
        { name: 'resources', valueInteger: 2 },
      ],
    ]);
  });

  it('creates no version and keeps lastUpdated', async () => {
    const p = api.newProject();
    const id = await create(p, { resourceType: 'Patient', name: [{ family: 'Keep' }] });
    const before = (await p.get(`/Patient/${id}`)).body;
    await dropIndexRows('Patient', id);
    expect((await runReindex(api.superAdmin, { name: 'project', valueString: p.projectId })).status).toBe(200);
    const after = await p.get(`/Patient/${id}`);
    expect(after.body.meta).toEqual(before.meta);
    const history = await p.get(`/Patient/${id}/_history`);
    expect(history.body.entry).toHaveLength(1);
    expect(await found(p, '/Patient?name=keep')).toEqual([id]);
  });

  it('only touches the types it is given', async () => {
    const p = api.newProject();
    const patient = await create(p, { resourceType: 'Patient', name: [{ family: 'Other' }] });
    await dropIndexRows('Patient', patient);
    expect((await runReindex(api.superAdmin, { name: 'project', valueString: p.projectId }, { name: 'type', valueCode: 'Observation' })).status).toBe(200);
    expect(await found(p, '/Patient?name=other')).toEqual([]);
  });

  it('indexes resources written before a custom SearchParameter existed', async () => {
    const p = api.newProject();
    const before = await create(p, { resourceType: 'Patient', gender: 'female', birthDate: '1970-01-01' });
    await create(p, {
      resourceType: 'SearchParameter',
      url: 'http://example.org/fhir/SearchParameter/born',
      name: 'born',
      status: 'active',
      description: 'Birth date, under another code',
      code: 'born',
      base: ['Patient'],
      type: 'date',
      expression: 'Patient.birthDate',
    });
    expect(await found(p, '/Patient?born=1970')).toEqual([]);
    expect((await runReindex(api.superAdmin, { name: 'project', valueString: p.projectId })).status).toBe(200);
    expect(await found(p, '/Patient?born=1970')).toEqual([before]);
  });

  it('voids the counts kept of what it reindexed', async () => {
    const p = api.newProject();
    const ids = [await create(p, { resourceType: 'Patient', gender: 'other' }), await create(p, { resourceType: 'Patient', gender: 'other' })];
    await dropIndexRows('Patient', ids[0]);
    const count = async () => (await p.get('/Patient?gender=other&_summary=count')).body.total;
    expect(await count()).toBe(1);
    expect((await runReindex(api.superAdmin, { name: 'project', valueString: p.projectId }, { name: 'type', valueCode: 'Patient' })).status).toBe(200);
    expect(await count()).toBe(2);
  });

  it('refuses an unknown resource type (400)', async () => {
    const res = await runReindex(api.superAdmin, { name: 'type', valueCode: 'Spaceship' });
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].details.text).toContain('Spaceship');
  });

  it('refuses an unknown project (400)', async () => {
    const res = await runReindex(api.superAdmin, { name: 'project', valueString: 'no-such-project' });
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].details.text).toContain('no-such-project');
  });

  it('is not available with GET, since it changes data (405)', async () => {
    const res = await api.superAdmin.get('/$reindex');
    expect(res.status, res.text).toBe(405);
  });
});
