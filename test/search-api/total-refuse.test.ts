import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { clientCredentialsToken, lazyToken, newDataDir, projectClient, startTestServer, useTestServer } from '../helpers/server.js';
import { create } from './helpers.js';

const ACCURACY = 'https://flint.dev/fhir/CodeSystem/search-total';

// A server configured to refuse accurate totals at or above the threshold.
const api = await useTestServer({ ACCURATE_COUNT_THRESHOLD: '3', ACCURATE_COUNT_OVER_THRESHOLD: 'refuse' });

describe('_total=accurate with ACCURATE_COUNT_OVER_THRESHOLD=refuse', () => {
  it('refuses with 400 too-costly when the estimate reaches the threshold', async () => {
    // A page of 3 with a next page proves 4 matches: the estimate is at least 4, whatever the planner says.
    const p = api.newProject();
    for (let i = 0; i < 6; i++) await create(p, { resourceType: 'Patient' });
    const res = await p.get('/Patient?_total=accurate&_count=3');
    expect(res.status).toBe(400);
    expect(res.body.issue[0].code).toBe('too-costly');
    expect(res.body.issue[0].details.text).toContain('_total=estimate');
  });

  it('still counts below the threshold', async () => {
    // The estimate of a search depends on the planner's statistics, i.e. on every project in the
    // database (thousands of small projects make a new project's estimate a few rows or more):
    // the threshold is set above the estimate this server reports for the very search. One
    // database for both servers: a data folder on PGlite, the test database on PostgreSQL.
    const dataDir = await newDataDir();
    try {
      const first = await startTestServer({ DATA_DIR: dataDir });
      const p = first.newProject();
      let estimate: number;
      let credentials: { clientId: string; clientSecret: string };
      try {
        for (let i = 0; i < 2; i++) await create(p, { resourceType: 'Patient' });
        const estimated = await p.get('/Patient?_total=estimate&_count=1');
        expect(estimated.status, estimated.text).toBe(200);
        estimate = estimated.body.total;
        credentials = await first.credentialsOf(p);
      } finally {
        await first.server.close();
      }
      // Twice the estimate and more: statistics refreshed in between (autovacuum, or the embedded
      // database's ANALYZE at start) move it a little; the check at the end says when they moved it too far.
      const threshold = 2 * estimate + 10;
      const refusing = await startTestServer({ DATA_DIR: dataDir, ACCURATE_COUNT_THRESHOLD: String(threshold), ACCURATE_COUNT_OVER_THRESHOLD: 'refuse' });
      try {
        const client = projectClient(refusing.fhir, p.projectId, lazyToken(() => clientCredentialsToken(refusing.url, credentials.clientId, credentials.clientSecret)));
        const res = await client.get('/Patient?_total=accurate&_count=1');
        expect(res.status, res.text).toBe(200);
        expect(res.body.total).toBe(2);
        expect(res.body.meta.tag).toContainEqual(expect.objectContaining({ system: ACCURACY, code: 'exact' }));
        // The estimate the count was decided on (kept a few seconds: the same value) was below the threshold.
        expect((await client.get('/Patient?_total=estimate&_count=1')).body.total).toBeLessThan(threshold);
      } finally {
        await refusing.server.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });

  it('_total=estimate is never refused', async () => {
    const p = api.newProject();
    for (let i = 0; i < 6; i++) await create(p, { resourceType: 'Patient' });
    const res = await p.get('/Patient?_total=estimate&_count=3');
    expect(res.status).toBe(200);
    expect(res.body.total).toBeGreaterThanOrEqual(4);
  });
});
