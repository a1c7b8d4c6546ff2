import { describe, expect, it } from 'vitest';
import { useTestServer } from '../helpers/server.js';
import { create } from './helpers.js';

// A server configured to refuse accurate totals at or above the threshold.
const api = await useTestServer({ ACCURATE_COUNT_THRESHOLD: '3', ACCURATE_COUNT_OVER_THRESHOLD: 'refuse' });

describe('_total=accurate with ACCURATE_COUNT_OVER_THRESHOLD=refuse', () => {
  it('refuses with 400 too-costly when the estimate reaches the threshold', async () => {
    const p = api.newProject();
    for (let i = 0; i < 6; i++) await create(p, { resourceType: 'Patient' });
    const res = await p.get('/Patient?_total=accurate&_count=3');
    expect(res.status).toBe(400);
    expect(res.body.issue[0].code).toBe('too-costly');
    expect(res.body.issue[0].details.text).toContain('_total=estimate');
  });

  it('still counts below the threshold', async () => {
    const p = api.newProject();
    for (let i = 0; i < 2; i++) await create(p, { resourceType: 'Patient' });
    const res = await p.get('/Patient?_total=accurate&_count=1');
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(2);
  });

  it('_total=estimate is never refused', async () => {
    const p = api.newProject();
    for (let i = 0; i < 6; i++) await create(p, { resourceType: 'Patient' });
    const res = await p.get('/Patient?_total=estimate&_count=3');
    expect(res.status).toBe(200);
    expect(res.body.total).toBeGreaterThanOrEqual(4);
  });
});
