import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { CSV_PAGE_SIZE } from '../../src/csv/csv-export.js';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient } from '../auth/helpers.js';

/** `GET [type]/$csv`: a search's every match as CSV. */
const api = await useTestServer();

async function csv(client: ProjectClient, query: string): Promise<Response> {
  return fetch(`${api.fhir}/${query}`, { headers: await client.authHeaders() });
}

const rowsOf = (text: string): string[][] => parse(text) as string[][];

describe('$csv', () => {
  it('answers text/csv with a header row and one row per match, multi-valued fields joined', async () => {
    const client = api.newProject();
    await client.post('/Patient', { resourceType: 'Patient', name: [{ given: ['Ada', 'King'], family: 'Lovelace' }], birthDate: '1815-12-10', gender: 'female' });
    const res = await csv(client, 'Patient/$csv?_fields=name.family,name.given,birthDate,name');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="Patient.csv"');
    expect(rowsOf(await res.text())).toEqual([
      ['name.family', 'name.given', 'birthDate', 'name'],
      ['Lovelace', 'Ada; King', '1815-12-10', 'Ada King Lovelace'],
    ]);
  });

  it('quotes cells with commas, quotes and line breaks, and defuses formula-like cells', async () => {
    const client = api.newProject();
    await client.post('/Patient', { resourceType: 'Patient', name: [{ family: 'O"Brien, Jr.\nthe second', given: ['=HYPERLINK("http://x")'] }] });
    const text = await (await csv(client, 'Patient/$csv?_fields=name.family,name.given')).text();
    expect(text).toContain('"O""Brien, Jr.\nthe second"');
    expect(rowsOf(text)[1]).toEqual(['O"Brien, Jr.\nthe second', `'=HYPERLINK("http://x")`]);
  });

  it('exports every match of the search, beyond one page, and only the matches', async () => {
    const client = api.newProject();
    const entries = Array.from({ length: CSV_PAGE_SIZE + 3 }, (_, i) => ({
      request: { method: 'POST', url: 'Observation' },
      resource: { resourceType: 'Observation', status: i % 2 === 0 ? 'final' : 'preliminary', code: { text: `obs ${i}` } },
    }));
    const bundle = await client.post('', { resourceType: 'Bundle', type: 'batch', entry: entries });
    expect(bundle.status).toBe(200);
    const all = rowsOf(await (await csv(client, 'Observation/$csv?_fields=status,code')).text());
    expect(all.length - 1).toBe(entries.length);
    expect(new Set(all.slice(1).map((row) => row[1])).size).toBe(entries.length);
    const final = rowsOf(await (await csv(client, 'Observation/$csv?status=final&_fields=status,code')).text());
    expect(final.length - 1).toBe(Math.ceil(entries.length / 2));
    expect(new Set(final.slice(1).map((row) => row[0]))).toEqual(new Set(['final']));
  });

  it('is 400 without _fields or with a field that is not a path', async () => {
    const client = api.newProject();
    expect((await csv(client, 'Patient/$csv')).status).toBe(400);
    expect((await csv(client, 'Patient/$csv?_fields=name[0]')).status).toBe(400);
  });

  it('is 400 for an unknown search parameter, before any CSV is sent', async () => {
    const res = await csv(api.newProject(), 'Patient/$csv?_fields=id&no-such-parameter=1');
    expect(res.status).toBe(400);
    expect((await res.json()).resourceType).toBe('OperationOutcome');
  });

  it("applies the caller's access: another project's resources and types its policy denies stay out", async () => {
    const owner = api.newProject();
    await owner.post('/Patient', { resourceType: 'Patient', name: [{ family: 'Hidden' }] });
    const stranger = api.newProject();
    expect(rowsOf(await (await csv(stranger, 'Patient/$csv?_fields=name.family')).text())).toEqual([['name.family']]);
    const policy = await owner.post('/AccessPolicy', { resourceType: 'AccessPolicy', resource: [{ resourceType: 'Observation' }] });
    const member = await addMemberClient(api, owner, { accessPolicy: `AccessPolicy/${policy.body.id}` });
    const denied = await fetch(`${api.fhir}/Patient/$csv?_fields=id`, { headers: { Authorization: `Bearer ${member.token}` } });
    expect(denied.status).toBe(403);
  });
});
