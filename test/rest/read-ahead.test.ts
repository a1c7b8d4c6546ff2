import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { rawGet, type RawAnswer } from '../helpers/raw-http.js';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';
import { addMemberClient } from '../auth/helpers.js';

// Once a client follows a cursor link, the server reads the page after the one it answers ahead of
// its request, and the second page after the first of a search the client walked before
// (src/http/read-ahead.ts). A client must not be able to tell: each page is what a
// search at that moment answers, for that caller only.

const TOKEN = 'read-ahead-metrics-token';
const api = await useTestServer({ METRICS_TOKEN: TOKEN, METRICS_PORT: '0' });
const withoutReadAhead = await useTestServer({ SEARCH_READ_AHEAD: 'false', CACHE_NAMESPACE: 'read_ahead_off' });

interface Page {
  ids: string[];
  next: string | undefined;
  answer: RawAnswer;
}

async function createPatients(client: ProjectClient, family: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const created = await client.post('/Patient', patientBody({ name: [{ family }] }));
    expect(created.status).toBe(201);
    ids.push(created.body.id as string);
  }
  return ids;
}

/** The link's path and query on `server` (links name the configured base URL, not the test server's port). */
const onServer = (link: string, server = api) => `${server.url}${new URL(link).pathname}${new URL(link).search}`;

async function getPage(url: string, headers: Record<string, string>): Promise<Page> {
  const answer = await rawGet(url, headers);
  expect(answer.status).toBe(200);
  const bytes = answer.headers['content-encoding'] === 'gzip' ? gunzipSync(answer.body) : answer.body;
  const bundle = JSON.parse(bytes.toString()) as { entry?: { resource: { id: string } }[]; link: { relation: string; url: string }[] };
  const next = bundle.link.find((l) => l.relation === 'next')?.url;
  return { ids: (bundle.entry ?? []).map((e) => e.resource.id), next: next && onServer(next, url.startsWith(api.url) ? api : withoutReadAhead), answer };
}

/** Every page of `Patient?_count=20`, following the next links one after another. */
async function walk(headers: Record<string, string>, url = `${api.fhir}/Patient?_count=20`): Promise<Page[]> {
  const pages: Page[] = [];
  for (let next: string | undefined = url; next; next = pages[pages.length - 1].next) pages.push(await getPage(next, headers));
  return pages;
}

async function readAheadHits(): Promise<number> {
  const text = await (await api.raw('/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } })).text();
  const line = text.split('\n').find((l) => l.startsWith('flint_cache_lookups_total{cache="search_read_ahead",result="hit"} '));
  return line ? Number(line.split(' ')[1]) : 0;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The read-ahead hits of `prepare`'s request (what it returns), on the first of up to 5 tries that
 * had any. A page kept is voided when a server on the same database says every project changed
 * (other files' reindex or clone on PostgreSQL), and skipped while admission has no spare place;
 * none is ever answered from what was kept without it.
 */
async function hitsOfFirstTry(prepare: () => Promise<() => Promise<void>>): Promise<number> {
  let hits = 0;
  for (let attempt = 0; attempt < 5 && hits === 0; attempt++) {
    const request = await prepare();
    const before = await readAheadHits();
    await request();
    hits = (await readAheadHits()) - before;
  }
  return hits;
}

/** The second page of `Patient?_count=20`, once the third has had time to be read ahead (a page reached by cursor starts it). */
async function secondPageOfWalk(headers: Record<string, string>): Promise<Page> {
  const first = await getPage(`${api.fhir}/Patient?_count=20`, headers);
  const second = await getPage(first.next!, headers);
  await pause(300);
  return second;
}

describe('pages of a walk by cursor read ahead', () => {
  it('answers every page of a walk as created, pages after the second from what was read ahead', async () => {
    const client = api.newProject();
    const ids = await createPatients(client, 'Walker', 70);
    const before = await readAheadHits();
    const pages = await walk({ ...(await client.authHeaders()), 'Accept-Encoding': 'gzip' });
    expect(pages.map((p) => p.ids.length)).toEqual([20, 20, 20, 10]);
    expect(pages.flatMap((p) => p.ids)).toEqual(ids);
    expect(pages[3].answer.headers['content-encoding']).toBe('gzip');
    expect(pages[3].answer.headers['x-request-id']).toBeDefined();
    // Pages 3 and 4 follow a page reached by cursor: read ahead, unless the client came first.
    expect((await readAheadHits()) - before).toBeGreaterThanOrEqual(1);
  });

  it('reads the second page ahead of a caller that walked the same search before', async () => {
    const client = api.newProject();
    const ids = await createPatients(client, 'Again', 45);
    const headers = { ...(await client.authHeaders()), 'Accept-Encoding': 'gzip' };
    await walk(headers);
    const answeredAhead = await hitsOfFirstTry(async () => {
      const first = await getPage(`${api.fhir}/Patient?_count=20`, headers);
      await pause(300);
      return async () => expect((await getPage(first.next!, headers)).ids).toEqual(ids.slice(20, 40));
    });
    expect(answeredAhead).toBe(1);
  });

  it('does not read the second page ahead of a caller that has not walked the search', async () => {
    const client = api.newProject();
    await createPatients(client, 'Once', 45);
    const headers = { ...(await client.authHeaders()), 'Accept-Encoding': 'gzip' };
    const first = await getPage(`${api.fhir}/Patient?_count=20`, headers);
    await pause(300);
    const before = await readAheadHits();
    await getPage(first.next!, headers);
    expect((await readAheadHits()) - before).toBe(0);
  });

  it('answers a returning walker its first page again from the one it was sent', async () => {
    const client = api.newProject();
    const ids = await createPatients(client, 'Return', 25);
    const headers = { ...(await client.authHeaders()), 'Accept-Encoding': 'gzip' };
    await walk(headers);
    const answeredKept = await hitsOfFirstTry(async () => {
      const sent = await getPage(`${api.fhir}/Patient?_count=20`, headers);
      return async () => {
        const again = await getPage(`${api.fhir}/Patient?_count=20`, headers);
        expect(again.ids).toEqual(ids.slice(0, 20));
        expect(again.answer.body).toEqual(sent.answer.body);
        expect(again.answer.headers['x-request-id']).not.toBe(sent.answer.headers['x-request-id']);
      };
    });
    expect(answeredKept).toBe(1);
  });

  it('does not keep the first page of a caller that has not walked the search', async () => {
    const client = api.newProject();
    await createPatients(client, 'Glance', 25);
    const headers = { ...(await client.authHeaders()), 'Accept-Encoding': 'gzip' };
    await getPage(`${api.fhir}/Patient?_count=20`, headers);
    const before = await readAheadHits();
    await getPage(`${api.fhir}/Patient?_count=20`, headers);
    expect((await readAheadHits()) - before).toBe(0);
  });

  it('does not answer a kept first page after a resource of it was deleted', async () => {
    const client = api.newProject();
    const ids = await createPatients(client, 'Forgotten', 25);
    const headers = await client.authHeaders();
    await walk(headers);
    expect((await getPage(`${api.fhir}/Patient?_count=20`, headers)).ids).toEqual(ids.slice(0, 20));
    expect((await client.delete(`/Patient/${ids[3]}`)).status).toBe(200);
    const first = await getPage(`${api.fhir}/Patient?_count=20`, headers);
    expect(first.ids).toEqual([...ids.slice(0, 3), ...ids.slice(4, 21)]);
  });

  it('reads ahead for a browser (Origin) on the full path, its pages with their CORS headers', async () => {
    const client = api.newProject();
    const ids = await createPatients(client, 'Browser', 70);
    const before = await readAheadHits();
    const pages = await walk({ ...(await client.authHeaders()), 'Accept-Encoding': 'gzip', Origin: 'http://app.example.org' });
    expect(pages.flatMap((p) => p.ids)).toEqual(ids);
    expect(pages[3].answer.headers['access-control-allow-origin']).toBeDefined();
    expect(pages[3].answer.headers['content-encoding']).toBe('gzip');
    expect((await readAheadHits()) - before).toBeGreaterThanOrEqual(1);
  });

  it('does not answer a page read ahead after a resource of it was deleted', async () => {
    const client = api.newProject();
    const ids = await createPatients(client, 'Deleted', 45);
    const headers = await client.authHeaders();
    const second = await secondPageOfWalk(headers);
    expect((await client.delete(`/Patient/${ids[42]}`)).status).toBe(200);
    const third = await getPage(second.next!, headers);
    expect(third.ids).toEqual([ids[40], ids[41], ids[43], ids[44]]);
  });

  it('does not answer a page read ahead after a resource of it was updated', async () => {
    const client = api.newProject();
    const ids = await createPatients(client, 'Renamed', 45);
    const headers = await client.authHeaders();
    const second = await secondPageOfWalk(headers);
    expect((await client.put(`/Patient/${ids[41]}`, patientBody({ id: ids[41], name: [{ family: 'Other' }] }))).status).toBe(200);
    // Pages go by _lastUpdated: the updated Patient is now the last.
    const third = await getPage(second.next!, headers);
    expect(third.ids).toEqual([ids[40], ids[42], ids[43], ids[44], ids[41]]);
  });

  it('answers another caller with the same link from its own project, not the page read ahead', async () => {
    const owner = api.newProject();
    const ids = await createPatients(owner, 'Owned', 45);
    const headers = await owner.authHeaders();
    const second = await secondPageOfWalk(headers);
    const other = api.newProject();
    await createPatients(other, 'Stranger', 1);
    const seen = await rawGet(second.next!, await other.authHeaders());
    const text = seen.body.toString();
    expect(ids.filter((id) => text.includes(id))).toEqual([]);
    expect((await getPage(second.next!, headers)).ids).toEqual(ids.slice(40));
  });

  it('does not answer a page read ahead for a member whose AccessPolicy changed since', async () => {
    const admin = api.newProject();
    await createPatients(admin, 'Guarded', 45);
    const policy = await admin.post('/AccessPolicy', { resourceType: 'AccessPolicy', resource: [{ resourceType: 'Patient', criteria: 'Patient?gender=male' }] });
    expect(policy.status).toBe(201);
    const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.body.id}` });
    const headers = { Authorization: `Bearer ${member.token}` };
    const second = await secondPageOfWalk(headers);
    expect(second.ids).toHaveLength(20);
    const narrowed = { resourceType: 'AccessPolicy', id: policy.body.id, resource: [{ resourceType: 'Patient', criteria: 'Patient?gender=female' }] };
    expect((await admin.put(`/AccessPolicy/${policy.body.id}`, narrowed)).status).toBe(200);
    expect((await getPage(second.next!, headers)).ids).toEqual([]);
  });

  it('answers the same pages with SEARCH_READ_AHEAD=false', async () => {
    const client = withoutReadAhead.newProject();
    const ids = await createPatients(client, 'Unread', 45);
    const pages = await walk(await client.authHeaders(), `${withoutReadAhead.fhir}/Patient?_count=20`);
    expect(pages.flatMap((p) => p.ids)).toEqual(ids);
  });
});
