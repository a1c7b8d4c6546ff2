import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer } from '../helpers/server.js';

const TOKEN = 'metrics-token-of-the-tests';
const api = await useTestServer({ METRICS_TOKEN: TOKEN, METRICS_PORT: '0' });
const withoutToken = await useTestServer({ CACHE_NAMESPACE: 'metrics_off' });
const scrapeHeaders = { Authorization: `Bearer ${TOKEN}` };

/** The value of one series in Prometheus text (0 when absent). */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

async function scrape(): Promise<string> {
  const res = await api.raw('/metrics', { headers: scrapeHeaders });
  expect(res.status).toBe(200);
  return res.text();
}

const readSeries = (status: number) => `flint_http_request_duration_seconds_count{method="GET",route="/fhir/R4/:type/:id",status="${status}"}`;

describe('GET /metrics on the server port (METRICS_TOKEN)', () => {
  it('refuses a scrape without the token: 401 OperationOutcome with WWW-Authenticate', async () => {
    const res = await api.raw('/metrics');
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(await res.json()).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ code: 'login' }] });
  });

  it('refuses a user access token: only METRICS_TOKEN opens it', async () => {
    const res = await api.raw('/metrics', { headers: await api.newProject().authHeaders() });
    expect(res.status).toBe(401);
    expect((await res.json()).issue[0].details.text).toBe('The bearer token is not METRICS_TOKEN');
  });

  it('answers Prometheus text with the token', async () => {
    const res = await api.raw('/metrics', { headers: scrapeHeaders });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    expect(text).toContain('# TYPE flint_http_request_duration_seconds histogram');
    expect(text).toContain('# TYPE process_cpu_seconds_total counter');
  });

  it('counts reads by id (the fast path) under the route pattern, never the id', async () => {
    const client = api.newProject();
    const created = await client.post('/Patient', patientBody());
    const before = sample(await scrape(), readSeries(200));
    expect((await client.get(`/Patient/${created.body.id}`)).status).toBe(200);
    expect((await client.get(`/Patient/${created.body.id}`)).status).toBe(200);
    const text = await scrape();
    expect(sample(text, readSeries(200)) - before).toBe(2);
    expect(text).not.toContain(created.body.id);
  });

  it('counts requests of the full path by pattern and status, with latency buckets', async () => {
    const client = api.newProject();
    const series = 'flint_http_request_duration_seconds_count{method="GET",route="/fhir/R4/:type",status="200"}';
    const bucket = 'flint_http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/fhir/R4/:type",status="200"}';
    const before = await scrape();
    expect((await client.get('/Patient?name=nobody')).status).toBe(200);
    const after = await scrape();
    expect(sample(after, series) - sample(before, series)).toBe(1);
    expect(sample(after, bucket) - sample(before, bucket)).toBe(1);
  });

  it('labels a path no route takes as unmatched', async () => {
    const series = 'flint_http_request_duration_seconds_count{method="GET",route="unmatched",status="404"}';
    const before = sample(await scrape(), series);
    expect((await api.raw('/no/such/path/4f1c')).status).toBe(404);
    const text = await scrape();
    expect(sample(text, series) - before).toBe(1);
    expect(text).not.toContain('4f1c');
  });

  it('reports the job queue depth, admission and cache lookups', async () => {
    const text = await scrape();
    expect(text).toMatch(/^flint_async_jobs\{status="accepted"\} \d+$/m);
    expect(text).toMatch(/^flint_async_jobs\{status="active"\} \d+$/m);
    expect(text).toMatch(/^flint_admission_requests\{state="in_work"\} \d+$/m);
    expect(text).toMatch(/^flint_cache_lookups_total\{cache="search_count",result="hit"\} \d+$/m);
  });

  it.runIf(process.env.DATABASE_URL)('reports the PostgreSQL pool use', async () => {
    const text = await scrape();
    expect(text).toMatch(/^flint_db_pool_connections\{pool="main",state="total"\} \d+$/m);
    expect(text).toMatch(/^flint_db_pool_connections\{pool="main",state="waiting"\} \d+$/m);
  });

  // At least: on PostgreSQL other test servers share the table and may hold jobs of their own.
  it('counts an AsyncJob accepted and not finished in the queue depth', async () => {
    const superAdmin = api.superAdmin;
    const job = await superAdmin.post('/AsyncJob', { resourceType: 'AsyncJob', status: 'accepted', requestTime: new Date().toISOString(), request: 'http://example.org/' });
    expect(job.status).toBe(201);
    expect(sample(await scrape(), 'flint_async_jobs{status="accepted"}')).toBeGreaterThanOrEqual(1);
    await superAdmin.put(`/AsyncJob/${job.body.id}`, { ...job.body, status: 'completed' });
  });
});

describe('METRICS_PORT', () => {
  it('serves /metrics on its own port (with the token when METRICS_TOKEN is set)', async () => {
    const url = api.server.metricsUrl!;
    expect((await fetch(url)).status).toBe(401);
    const res = await fetch(url, { headers: scrapeHeaders });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('flint_http_request_duration_seconds_bucket');
  });

  it('serves nothing else there', async () => {
    const res = await fetch(api.server.metricsUrl!.replace('/metrics', '/fhir/R4/metadata'));
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ resourceType: 'OperationOutcome', issue: [{ code: 'not-found' }] });
  });
});

describe('without METRICS_TOKEN', () => {
  it('has no /metrics on the server port', async () => {
    expect((await withoutToken.raw('/metrics')).status).toBe(404);
  });
});
