import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { SYSTEM, withAnimals } from './fixtures.js';

/**
 * A ValueSet filter with `op: regex` is a regular expression the database evaluates: one that does
 * not compile is refused when the ValueSet is written, and answered with 400 (not 500) where a
 * ValueSet that was never written through the check is expanded (an inline `valueSet`).
 */

const api = await useTestServer();
const badCompose = { include: [{ system: SYSTEM, filter: [{ property: 'code', op: 'regex', value: '((' }] }] };

describe('ValueSet regex filters', () => {
  it('refuses a ValueSet whose regex filter does not compile, naming the filter value', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const res = await client.post('/ValueSet', { resourceType: 'ValueSet', url: 'http://flint.test/ValueSet/bad-regex', status: 'active', compose: badCompose });
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].code).toBe('invalid');
    expect(res.body.issue[0].expression).toEqual(['ValueSet.compose.include[0].filter[0].value']);
  });

  it('still stores a ValueSet whose regex filter compiles', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const compose = { include: [{ system: SYSTEM, filter: [{ property: 'code', op: 'regex', value: 'p(uppy|arrot)' }] }] };
    const res = await client.post('/ValueSet', { resourceType: 'ValueSet', url: 'http://flint.test/ValueSet/good-regex', status: 'active', compose });
    expect(res.status, res.text).toBe(201);
  });

  it('answers $expand of an inline ValueSet with a bad regex filter with 400', async () => {
    const client = api.newProject();
    await withAnimals(client);
    const valueSet = { resourceType: 'ValueSet', status: 'active', compose: badCompose };
    const res = await client.post('/ValueSet/$expand', { resourceType: 'Parameters', parameter: [{ name: 'valueSet', resource: valueSet }] });
    expect(res.status, res.text).toBe(400);
    expect(res.body.issue[0].details.text).toContain('((');
  });
});
