import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createRequestContext } from '../../src/access/context.js';
import { patientBody, useTestServer } from '../helpers/server.js';

/**
 * Plain creates that arrive while another create's statement runs are written together by the
 * next statement (src/storage/create-batches.ts). With one statement in flight at a time, a burst
 * of creates is written in groups; each client must still get its own answer.
 */

const api = await useTestServer({ CREATE_GROUPS_IN_FLIGHT: '1' });
const BURST = 40;

describe('creates written together', () => {
  it('answers each create of a burst with its own resource, readable and searchable', async () => {
    const client = api.newProject();
    const family = `Burst${randomUUID().slice(0, 8)}`;
    const created = await Promise.all(Array.from({ length: BURST }, (_, index) => client.post('/Patient', patientBody({ name: [{ family, given: [`N${index}`] }] }))));

    expect(created.map((res) => res.status)).toEqual(Array(BURST).fill(201));
    const ids = created.map((res) => res.body.id as string);
    expect(new Set(ids).size).toBe(BURST);
    const read = await client.get(`/Patient/${ids[BURST - 1]}`);
    expect(read.body.name[0].given[0]).toBe(`N${BURST - 1}`);
    const found = await client.get(`/Patient?family=${family}&_total=accurate&_count=100`);
    expect(found.body.total).toBe(BURST);
  });

  it('writes a burst in fewer statements than creates', async () => {
    const client = api.newProject();
    await client.post('/Patient', patientBody());
    const db = api.server.services.db;
    const before = db.statementCount;
    const created = await Promise.all(Array.from({ length: BURST }, () => client.post('/Patient', patientBody())));
    expect(created.every((res) => res.status === 201)).toBe(true);
    expect(db.statementCount - before).toBeLessThan(BURST);
  });

  it('writes together and indexes a burst that mixes types with different kinds of index rows', async () => {
    const client = api.newProject();
    const family = `Mixed${randomUUID().slice(0, 8)}`;
    const subject = (await client.post('/Patient', patientBody())).body.id as string;
    // A Patient with token rows only, one with string rows too, and Observations with quantity,
    // reference, date and composite rows: a group's kinds differ from one resource to the next.
    const bodies = Array.from({ length: 12 }, (_, index) =>
      index % 3 === 0
        ? { resourceType: 'Patient', gender: 'other', identifier: [{ system: 'urn:mixed', value: `${family}-${index}` }] }
        : index % 3 === 1
          ? patientBody({ name: [{ family, given: [`N${index}`] }] })
          : {
              resourceType: 'Observation', status: 'final', code: { coding: [{ system: 'http://loinc.org', code: '8867-4' }] },
              subject: { reference: `Patient/${subject}` }, effectiveDateTime: '2024-03-01T10:00:00Z', valueQuantity: { value: 60 + index, unit: '/min', system: 'http://unitsofmeasure.org', code: '/min' },
            },
    );
    const db = api.server.services.db;
    const before = db.statementCount;
    const created = await Promise.all(bodies.map((body) => client.post(`/${body.resourceType}`, body)));
    expect(created.map((res) => res.status)).toEqual(Array(bodies.length).fill(201));
    // A group whose statement failed is retried one create at a time: more statements than creates.
    expect(db.statementCount - before).toBeLessThan(bodies.length);

    expect((await client.get(`/Patient?identifier=urn:mixed|${family}-9&_total=accurate`)).body.total).toBe(1);
    expect((await client.get(`/Patient?family=${family}&_total=accurate`)).body.total).toBe(4);
    const observations = `/Observation?subject=Patient/${subject}&date=2024-03-01&_total=accurate`;
    expect((await client.get(observations)).body.total).toBe(4);
    expect((await client.get(`/Observation?code-value-quantity=http://loinc.org|8867-4$ge68&subject=Patient/${subject}&_total=accurate`)).body.total).toBe(2);
  });

  it('fails only the create at fault when a group’s statement fails', async () => {
    const projectId = randomUUID();
    const repo = createRequestContext(api.server.services, { projectId, superAdmin: false, projectAdmin: true }, randomUUID()).repo;
    const taken = (await repo.createResource('Patient', patientBody())).resource.id!;
    const ids: string[] = Array.from({ length: 10 }, () => randomUUID());
    ids[5] = taken;

    const results = await Promise.allSettled(ids.map((id) => repo.createResource('Patient', patientBody(), id)));

    expect(results.map((result) => result.status)).toEqual(ids.map((id) => (id === taken ? 'rejected' : 'fulfilled')));
    for (const id of ids.filter((id) => id !== taken)) expect((await repo.readResource('Patient', id)).id).toBe(id);
  });
});
