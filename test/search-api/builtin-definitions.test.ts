import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { create, found, link, matchIds, pathOf } from './helpers.js';

/**
 * Searches of StructureDefinition and SearchParameter find the definitions the server ships
 * (first, read-only) beside the project's own, on the parameters they are matched on.
 */

const api = await useTestServer();

describe('built-in definitions in search', () => {
  it('StructureDefinition?_filter=name eq Patient finds the core Patient definition with its snapshot', async () => {
    const p = api.newProject();
    const res = await p.get(`/StructureDefinition?_filter=${encodeURIComponent('name eq Patient')}`);
    expect(res.status, res.text).toBe(200);
    const resources = res.body.entry.map((e: any) => e.resource);
    expect(resources.map((r: any) => r.url)).toEqual(['http://hl7.org/fhir/StructureDefinition/Patient']);
    expect(resources[0].snapshot.element.some((e: any) => e.path === 'Patient.birthDate')).toBe(true);
  });

  it("the project's own definitions follow the built-in ones, and the total counts both", async () => {
    const p = api.newProject();
    const own = await create(p, {
      resourceType: 'SearchParameter',
      url: 'http://example.org/sp/nickname',
      name: 'nickname',
      status: 'active',
      description: 'Nickname',
      code: 'nickname',
      base: ['Patient'],
      type: 'string',
      expression: "Patient.name.where(use = 'nickname').given",
    });
    const res = await p.get('/SearchParameter?base=Patient&_count=200&_total=accurate');
    const ids = matchIds(res);
    expect(ids[ids.length - 1]).toBe(own);
    expect(ids).toContain('individual-birthdate');
    expect(res.body.total).toBe(ids.length);
  });

  it('offset paging runs through the built-ins into the own definitions', async () => {
    const p = api.newProject();
    const own = await create(p, {
      resourceType: 'StructureDefinition',
      url: 'http://example.org/sd/x',
      name: 'Patient',
      status: 'draft',
      kind: 'resource',
      abstract: false,
      type: 'Patient',
      baseDefinition: 'http://hl7.org/fhir/StructureDefinition/Patient',
      derivation: 'constraint',
      differential: { element: [{ id: 'Patient', path: 'Patient' }] },
    });
    const first = await p.get(`/StructureDefinition?_filter=${encodeURIComponent('name eq Patient')}&_count=1`);
    expect(matchIds(first)).toEqual(['Patient']);
    const next = link(first, 'next');
    expect(next).toBeDefined();
    const second = await p.get(pathOf(next!));
    expect(matchIds(second)).toEqual([own]);
    expect(link(second, 'next')).toBeUndefined();
  });

  it('a parameter matched only in SQL leaves the built-ins out', async () => {
    const p = api.newProject();
    expect(await found(p, '/StructureDefinition?name=Patient&publisher=HL7')).toEqual([]);
    expect((await found(p, '/StructureDefinition?name=Patient')).length).toBeGreaterThan(0);
  });

  it('they are not readable by id nor writable: a read is 404', async () => {
    const p = api.newProject();
    expect((await p.get('/StructureDefinition/Patient')).status).toBe(404);
  });
});
