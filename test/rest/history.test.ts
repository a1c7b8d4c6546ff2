import { describe, expect, it } from 'vitest';
import { addMemberClient } from '../auth/helpers.js';
import { patientBody, projectClient, useTestServer, type ProjectClient } from '../helpers/server.js';

/**
 * History over HTTP, as a client sees it: system history (`GET _history`), `_at` at system, type
 * and instance level, `_since`, keyset `next` links, and an AccessPolicy's effect on system
 * history. Each test writes in projects of its own. A new project's history starts with what
 * setting it up wrote (Project, ClientApplication, ProjectMembership, the Login of the token); the
 * tests look at the types they write, or at what follows an instant after the setup.
 */

const api = await useTestServer();
/** The configured base URL of the test servers, which links and fullUrls carry. */
const BASE = 'http://localhost/fhir/R4';

interface HistoryEntry {
  fullUrl: string;
  resource?: { resourceType: string; id: string; meta: { versionId: string; lastUpdated: string; project?: string }; [key: string]: unknown };
  request: { method: string; url: string };
  response: { status: string; etag: string; lastModified: string };
}
interface HistoryBundle {
  resourceType: string;
  type: string;
  link: { relation: string; url: string }[];
  entry?: HistoryEntry[];
}
interface Written {
  resourceType: string;
  id: string;
  meta: { versionId: string; lastUpdated: string };
  [key: string]: unknown;
}

const CLINICAL = new Set(['Patient', 'Observation', 'Organization']);
const observation = () => ({ resourceType: 'Observation', status: 'final', code: { text: 'heart rate' } });

/** `Type/id/versionId` of a history entry (from its fullUrl and ETag: a deletion has no resource). */
function entryKey(entry: HistoryEntry): string {
  expect(entry.fullUrl.startsWith(`${BASE}/`)).toBe(true);
  const version = /^W\/"(.+)"$/.exec(entry.response.etag)?.[1];
  expect(version).toBeDefined();
  return `${entry.fullUrl.slice(BASE.length + 1)}/${version}`;
}

const keyOf = (resource: Written) => `${resource.resourceType}/${resource.id}/${resource.meta.versionId}`;
const entriesOf = (bundle: HistoryBundle) => bundle.entry ?? [];
/** The entries of the types the tests write, leaving out what setting up the project wrote. */
const clinical = (bundle: HistoryBundle) => entriesOf(bundle).filter((e) => CLINICAL.has(e.fullUrl.slice(BASE.length + 1).split('/')[0]!));
const keys = (entries: HistoryEntry[]) => entries.map(entryKey);

async function history(client: ProjectClient, path: string): Promise<HistoryBundle> {
  const res = await client.get<HistoryBundle>(path);
  expect(res.status, res.text).toBe(200);
  expect(res.body.resourceType).toBe('Bundle');
  expect(res.body.type).toBe('history');
  return res.body;
}

async function create(client: ProjectClient, body: Record<string, unknown>): Promise<Written> {
  const res = await client.post<Written>(`/${body.resourceType as string}`, body);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

async function update(client: ProjectClient, resource: Written, changes: Record<string, unknown>): Promise<Written> {
  const res = await client.put<Written>(`/${resource.resourceType}/${resource.id}`, { ...resource, ...changes });
  expect(res.status, res.text).toBe(200);
  return res.body;
}

async function remove(client: ProjectClient, resource: Written): Promise<void> {
  const res = await client.delete(`/${resource.resourceType}/${resource.id}`);
  expect([200, 204]).toContain(res.status);
}

/**
 * An instant strictly between the writes before and after it: the server stamps versions with
 * its clock in milliseconds, on this machine.
 */
async function instantBetweenWrites(): Promise<string> {
  await new Promise((resolve) => setTimeout(resolve, 5));
  const instant = new Date().toISOString();
  await new Promise((resolve) => setTimeout(resolve, 5));
  return instant;
}

/** The path of a link (`next`) of a page, relative to the FHIR base the test client talks to. */
function linkPath(bundle: HistoryBundle, relation: string): string | undefined {
  const url = bundle.link.find((l) => l.relation === relation)?.url;
  if (url === undefined) return undefined;
  expect(url.startsWith(`${BASE}/`)).toBe(true);
  return url.slice(BASE.length);
}

/** Every page from `path` on, following `next` links. */
async function walk(client: ProjectClient, path: string): Promise<HistoryBundle[]> {
  const pages: HistoryBundle[] = [];
  for (let next: string | undefined = path; next !== undefined; next = linkPath(pages.at(-1)!, 'next')) {
    pages.push(await history(client, next));
    if (pages.length > 100) throw new Error('more than 100 pages: the next links go round');
  }
  return pages;
}

/** Versions of several types in a project: 3 Patients (2 updated, 1 deleted), an Observation, an Organization: 8 versions. */
async function eightVersions(client: ProjectClient): Promise<void> {
  const [a, b, c] = [await create(client, patientBody()), await create(client, patientBody()), await create(client, patientBody())];
  await create(client, observation());
  await update(client, a!, { gender: 'female' });
  await create(client, { resourceType: 'Organization', name: 'Acme' });
  await update(client, b!, { gender: 'other' });
  await remove(client, c!);
}

describe('system history (GET _history)', () => {
  it("lists the project's writes of every type newest first, and nothing of another project", async () => {
    const mine = api.newProject();
    const other = api.newProject();
    const patient = await create(mine, patientBody());
    const theirs = await create(other, patientBody());
    const obs = await create(mine, observation());
    const org = await create(mine, { resourceType: 'Organization', name: 'Acme' });
    await create(other, observation());
    const updated = await update(mine, patient, { gender: 'female' });

    const bundle = await history(mine, '/_history');
    expect(keys(clinical(bundle))).toEqual([keyOf(updated), keyOf(org), keyOf(obs), keyOf(patient)]);
    expect(clinical(bundle).map((e) => e.request)).toEqual([
      { method: 'PUT', url: `Patient/${patient.id}` },
      { method: 'POST', url: 'Organization' },
      { method: 'POST', url: 'Observation' },
      { method: 'POST', url: 'Patient' },
    ]);
    const all = entriesOf(bundle);
    expect(all.every((e) => e.resource?.meta.project === mine.projectId)).toBe(true);
    expect(all.some((e) => e.resource?.id === theirs.id)).toBe(false);
    const instants = all.map((e) => Date.parse(e.response.lastModified));
    expect(instants).toEqual([...instants].sort((x, y) => y - x));
  });

  it('shows a deletion as a DELETE entry without a resource, newest first', async () => {
    const client = api.newProject();
    const patient = await create(client, patientBody());
    await remove(client, patient);

    const [deletion, creation] = clinical(await history(client, '/_history'));
    expect(deletion!.request).toEqual({ method: 'DELETE', url: `Patient/${patient.id}` });
    expect(deletion!.resource).toBeUndefined();
    expect(deletion!.fullUrl).toBe(`${BASE}/Patient/${patient.id}`);
    expect(deletion!.response.status).toMatch(/^204\b/);
    expect(entryKey(creation!)).toBe(keyOf(patient));
  });

  it('_since keeps the versions written at or after the instant', async () => {
    const client = api.newProject();
    const before = await create(client, patientBody());
    const since = await instantBetweenWrites();
    const after = await create(client, observation());
    const updated = await update(client, before, { gender: 'female' });

    const bundle = await history(client, `/_history?_since=${encodeURIComponent(since)}`);
    expect(keys(entriesOf(bundle))).toEqual([keyOf(updated), keyOf(after)]);
  });

  it('refuses a malformed _since with 400', async () => {
    const client = api.newProject();
    const res = await client.get('/_history?_since=yesterday');
    expect(res.status).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });
});

describe('_at (the version current at an instant)', () => {
  /** A Patient and an Observation, then after `at` the Patient updated, the Observation deleted and a second Observation created. */
  async function changedAfterAnInstant(client: ProjectClient) {
    const patient = await create(client, patientBody());
    const obs = await create(client, observation());
    const at = await instantBetweenWrites();
    const updated = await update(client, patient, { gender: 'female' });
    await remove(client, obs);
    const later = await create(client, observation());
    return { patient, obs, updated, later, at: encodeURIComponent(at) };
  }

  it('at system level lists each resource as it was at the instant, and leaves out later ones', async () => {
    const client = api.newProject();
    const { patient, obs, at } = await changedAfterAnInstant(client);
    const bundle = await history(client, `/_history?_at=${at}`);
    expect(keys(clinical(bundle))).toEqual([keyOf(obs), keyOf(patient)]);
  });

  it('at type level lists the type as it was at the instant', async () => {
    const client = api.newProject();
    const { obs, at } = await changedAfterAnInstant(client);
    expect(keys(entriesOf(await history(client, `/Observation/_history?_at=${at}`)))).toEqual([keyOf(obs)]);
  });

  it('at instance level gives the one version current at the instant', async () => {
    const client = api.newProject();
    const { patient, at } = await changedAfterAnInstant(client);
    const bundle = await history(client, `/Patient/${patient.id}/_history?_at=${at}`);
    expect(keys(entriesOf(bundle))).toEqual([keyOf(patient)]);
    expect(entriesOf(bundle)[0]!.resource?.gender).toBe('male');
  });

  it('shows a resource deleted before the instant as its deletion', async () => {
    const client = api.newProject();
    const { patient, obs, later } = await changedAfterAnInstant(client);
    const now = encodeURIComponent(await instantBetweenWrites());
    const entries = clinical(await history(client, `/_history?_at=${now}`));
    expect(entries.map((e) => [e.request.method, e.fullUrl])).toEqual([
      ['POST', `${BASE}/Observation/${later.id}`],
      ['DELETE', `${BASE}/Observation/${obs.id}`],
      ['PUT', `${BASE}/Patient/${patient.id}`],
    ]);
    expect(entries[1]!.resource).toBeUndefined();
  });

  it('refuses a malformed _at with 400', async () => {
    const client = api.newProject();
    const res = await client.get('/_history?_at=not-an-instant');
    expect(res.status).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
  });
});

describe('paging system history by next links', () => {
  it('walking next links with _count=2 returns every version exactly once, newest first', async () => {
    const client = api.newProject();
    await eightVersions(client);
    const whole = await history(client, '/_history?_count=100');
    expect(linkPath(whole, 'next')).toBeUndefined();
    expect(clinical(whole)).toHaveLength(8);

    const pages = await walk(client, '/_history?_count=2');
    expect(pages.length).toBeGreaterThanOrEqual(5);
    for (const page of pages) expect(entriesOf(page).length).toBeLessThanOrEqual(2);
    expect(pages.slice(0, -1).every((page) => entriesOf(page).length === 2)).toBe(true);
    const walked = keys(pages.flatMap(entriesOf));
    expect(new Set(walked).size).toBe(walked.length);
    expect(walked).toEqual(keys(entriesOf(whole)));
  });

  it('walking next links of a _since history stays within it', async () => {
    const client = api.newProject();
    await create(client, patientBody());
    const since = encodeURIComponent(await instantBetweenWrites());
    await eightVersions(client);
    const pages = await walk(client, `/_history?_since=${since}&_count=2`);
    expect(pages).toHaveLength(4);
    const walked = pages.flatMap(entriesOf);
    expect(walked).toHaveLength(8);
    expect(keys(walked)).toEqual(keys(clinical(await history(client, '/_history?_count=100')).slice(0, 8)));
  });

  it('walking next links over the versions of a transaction returns each once', async () => {
    const client = api.newProject();
    await client.token(); // sets the project up: what that writes comes before `since`
    const since = encodeURIComponent(await instantBetweenWrites());
    const entry = Array.from({ length: 9 }, () => ({ resource: patientBody(), request: { method: 'POST', url: 'Patient' } }));
    const res = await client.post('/', { resourceType: 'Bundle', type: 'transaction', entry });
    expect(res.status, res.text).toBe(200);
    const created = (res.body.entry as { response: { location: string } }[]).map((e) => {
      const [, key] = /(Patient\/[^/]+\/_history\/[^/]+)$/.exec(e.response.location)!;
      return key!.replace('/_history/', '/');
    });

    const pages = await walk(client, `/_history?_since=${since}&_count=2`);
    const walked = keys(pages.flatMap(entriesOf));
    expect(walked).toHaveLength(9);
    expect(new Set(walked)).toEqual(new Set(created));
  });

  it('walking next links of an _at history gives each resource once, as it was', async () => {
    const client = api.newProject();
    await client.token(); // sets the project up: what that writes comes before `since`
    const since = encodeURIComponent(await instantBetweenWrites());
    await eightVersions(client);
    const at = encodeURIComponent(await instantBetweenWrites());
    const pages = await walk(client, `/_history?_since=${since}&_at=${at}&_count=1`);
    const walked = pages.flatMap(entriesOf);
    // 3 Patients (one as its deletion), the Observation and the Organization.
    expect(walked.map((e) => e.fullUrl)).toHaveLength(5);
    expect(new Set(walked.map((e) => e.fullUrl)).size).toBe(5);
    expect(walked.filter((e) => e.request.method === 'DELETE')).toHaveLength(1);
    expect(keys(walked)).toEqual(keys(entriesOf(await history(client, `/_history?_since=${since}&_at=${at}`))));
  });

  it('walking next links of a type history returns each of its versions once', async () => {
    const client = api.newProject();
    await eightVersions(client);
    const pages = await walk(client, '/Patient/_history?_count=2');
    const walked = keys(pages.flatMap(entriesOf));
    expect(walked).toHaveLength(6);
    expect(walked).toEqual(keys(entriesOf(await history(client, '/Patient/_history?_count=100'))));
  });

  it('versions written during a walk do not shift the pages still to come', async () => {
    const client = api.newProject();
    await eightVersions(client);
    const before = keys(entriesOf(await history(client, '/_history?_count=100')));
    const first = await history(client, '/_history?_count=2');
    const added = await create(client, patientBody());
    const rest = await walk(client, linkPath(first, 'next')!);
    const walked = keys([first, ...rest].flatMap(entriesOf));
    expect(walked).toEqual(before);
    expect(walked).not.toContain(keyOf(added));
  });

  it('refuses a malformed _cursor with 400', async () => {
    const client = api.newProject();
    for (const cursor of ['not-a-cursor', Buffer.from('yesterday|123', 'utf8').toString('base64url'), '%%%']) {
      const res = await client.get(`/_history?_count=2&_cursor=${encodeURIComponent(cursor)}`);
      expect(res.status, cursor).toBe(400);
      expect(res.body.resourceType).toBe('OperationOutcome');
      expect(JSON.stringify(res.body)).toContain('_cursor');
    }
  });
});

describe('system history under an AccessPolicy', () => {
  it('leaves out a type the policy narrows by criteria, and types it does not allow', async () => {
    const admin = api.newProject();
    const org = await create(admin, { resourceType: 'Organization', name: 'Mine' });
    await create(admin, patientBody({ managingOrganization: { reference: `Organization/${org.id}` } }));
    const obs = await create(admin, observation());
    const policy = await create(admin, {
      resourceType: 'AccessPolicy',
      name: 'my organization only',
      resource: [
        { resourceType: 'Patient', criteria: `Patient?organization=Organization/${org.id}` },
        { resourceType: 'Observation' },
      ],
    });
    const member = await addMemberClient(api, admin, { accessPolicy: `AccessPolicy/${policy.id}` });
    const client = projectClient(api.fhir, admin.projectId, async () => member.token);

    const bundle = await history(client, '/_history');
    expect(keys(entriesOf(bundle))).toEqual([keyOf(obs)]);
    // The admin's history of the same project has them all.
    expect(clinical(await history(admin, '/_history')).map((e) => e.request.url)).toEqual(['Observation', 'Patient', 'Organization']);
  });
});
