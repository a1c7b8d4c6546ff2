import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { patientBody, useTestServer } from '../helpers/server.js';
import { bearer, clientToken, getJson, sendJson, tokenRequest } from '../auth/helpers.js';

const api = await useTestServer();

const init = async (token: string, parameter: unknown[] | undefined) =>
  sendJson(api, 'POST', '/fhir/R4/Project/$init', parameter === undefined ? { resourceType: 'Parameters' } : { resourceType: 'Parameters', parameter }, {
    ...bearer(token),
    'Content-Type': 'application/fhir+json',
  });

/** A token of a fresh user (invited into a project of its own), so $init has a user to make owner. */
async function userToken() {
  const home = api.newProject();
  const email = `${randomUUID()}@example.org`;
  const invited = await sendJson(
    api,
    'POST',
    `/admin/projects/${home.projectId}/invite`,
    { resourceType: 'Practitioner', firstName: 'Owen', lastName: 'Er', externalId: randomUUID(), email, password: 'pa55word!' },
    bearer(await home.token()),
  );
  expect(invited.status).toBe(201);
  const res = await tokenRequest(api, { grant_type: 'password', username: email, password: 'pa55word!', project: home.projectId });
  expect(res.status).toBe(200);
  return res.body.access_token as string;
}

describe('Project/$init', () => {
  it('creates the project, the owner admin membership and the default client; 201 with the Project', async () => {
    const token = await userToken();
    const name = `Clinic ${randomUUID().slice(0, 6)}`;
    const res = await init(token, [{ name: 'name', valueString: name }]);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ resourceType: 'Project', name, strictMode: true, owner: { reference: expect.stringMatching(/^User\//) } });
    const projectId = res.body.id;
    expect(res.body.meta.project).toBe(projectId);
    const db = api.server.services.db;
    const rows = await db.query<{ resourceType: string; content: string }>(
      `SELECT "resourceType", content::text AS content FROM resource WHERE "projectId" = $1 ORDER BY "resourceType"`,
      [projectId],
    );
    const types = rows.map((row) => row.resourceType);
    expect(types).toEqual(expect.arrayContaining(['ClientApplication', 'Practitioner', 'Project', 'ProjectMembership']));
    const memberships = rows.filter((r) => r.resourceType === 'ProjectMembership').map((r) => JSON.parse(r.content));
    const ownerMembership = memberships.find((m) => m.user.reference === res.body.owner.reference);
    expect(ownerMembership).toMatchObject({ admin: true, profile: { reference: expect.stringMatching(/^Practitioner\//) } });
    // The default client has a secret and acts in the new project as its admin.
    const client = JSON.parse(rows.find((r) => r.resourceType === 'ClientApplication')!.content);
    const { secret } = await (await api.raw(`/fhir/R4/ClientApplication/${client.id}`, { headers: bearer(await api.superAdmin.token()) })).json();
    const tokens = await clientToken(api, client.id, secret);
    expect(tokens.body.project.reference).toBe(`Project/${projectId}`);
    const created = await sendJson(api, 'POST', '/fhir/R4/Patient', patientBody(), { ...bearer(tokens.body.access_token), 'Content-Type': 'application/fhir+json' });
    expect(created.body.meta.project).toBe(projectId);
    const policy = await sendJson(api, 'POST', '/fhir/R4/AccessPolicy', { resourceType: 'AccessPolicy', name: 'p' }, { ...bearer(tokens.body.access_token), 'Content-Type': 'application/fhir+json' });
    expect(policy.status).toBe(201);
  });

  it('answers a missing name (or no parameters at all) with 400 invalid at Parameters.parameter', async () => {
    const token = await userToken();
    for (const parameter of [undefined, [], [{ name: 'ownerEmail', valueString: 'a@example.org' }]]) {
      const res = await init(token, parameter);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.issue[0]).toMatchObject({ code: 'invalid', expression: ['Parameters.parameter'] });
      expect(res.body.issue[0].details.text).toMatch(/required.*"name".*expected/);
    }
  });

  it('takes the owner from owner or ownerEmail, and needs one when the token has no user', async () => {
    const clientOnly = await api.newProject().token();
    const none = await init(clientOnly, [{ name: 'name', valueString: 'x' }]);
    expect(none.status).toBe(400);
    expect(none.body.issue[0].details.text).toMatch(/owner is needed/);
    const email = `${randomUUID()}@example.org`;
    const byEmail = await init(clientOnly, [
      { name: 'name', valueString: 'By email' },
      { name: 'ownerEmail', valueString: email },
    ]);
    expect(byEmail.status).toBe(201);
    const ownerId = byEmail.body.owner.reference;
    const user = await getJson(api, `/fhir/R4/${ownerId}`, bearer(await api.superAdmin.token()));
    expect(user.body.email).toBe(email);
    // A user of another project: only a super admin may name them (see below).
    const byRef = await init(await api.superAdmin.token(), [
      { name: 'name', valueString: 'By reference' },
      { name: 'owner', valueReference: { reference: ownerId } },
    ]);
    expect(byRef.status).toBe(201);
    expect(byRef.body.owner.reference).toBe(ownerId);
    const missing = await init(clientOnly, [
      { name: 'name', valueString: 'x' },
      { name: 'owner', valueReference: { reference: 'User/does-not-exist' } },
    ]);
    expect(missing.status).toBe(400);
  });

  it('makes one owner User of concurrent $init calls naming one new ownerEmail', async () => {
    // A super admin: once one call has made the User, the others name a user of another project.
    const token = await api.superAdmin.token();
    const email = `${randomUUID()}@example.org`;
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        init(token, [
          { name: 'name', valueString: `Race ${i}` },
          { name: 'ownerEmail', valueString: email },
        ]),
      ),
    );
    expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    const users = await getJson(api, `/fhir/R4/User?email=${encodeURIComponent(email)}`, bearer(await api.superAdmin.token()));
    expect(users.body.entry).toHaveLength(1);
    const owner = `User/${users.body.entry[0].resource.id}`;
    expect(results.map((r) => r.body.owner.reference)).toEqual([owner, owner, owner, owner]);
  });
});


/** A user invited into `project` (a member of it only): their reference and email. */
async function memberOf(project: ReturnType<typeof api.newProject>): Promise<{ reference: string; email: string }> {
  const email = `${randomUUID()}@example.org`;
  const invited = await sendJson(
    api,
    'POST',
    `/admin/projects/${project.projectId}/invite`,
    { resourceType: 'Practitioner', firstName: 'Ann', lastName: 'Other', externalId: randomUUID(), email, password: 'pa55word!' },
    bearer(await project.token()),
  );
  expect(invited.status, JSON.stringify(invited.body)).toBe(201);
  return { reference: invited.body.user.reference as string, email };
}

/** The number of memberships of a user, in every project. */
async function membershipsOf(reference: string): Promise<number> {
  const found = await getJson(api, `/fhir/R4/ProjectMembership?user=${reference}&_total=accurate`, bearer(await api.superAdmin.token()));
  expect(found.status).toBe(200);
  return found.body.total as number;
}

describe('Project/$init: who may be named owner', () => {
  it("refuses a project admin's owner from another project with the 400 of an unknown user, attaching nothing", async () => {
    const outsider = await memberOf(api.newProject());
    const admin = await api.newProject().token();
    const unknown = await init(admin, [
      { name: 'name', valueString: 'x' },
      { name: 'owner', valueReference: { reference: `User/${randomUUID()}` } },
    ]);
    const res = await init(admin, [
      { name: 'name', valueString: 'x' },
      { name: 'owner', valueReference: { reference: outsider.reference } },
    ]);
    expect(res.status).toBe(400);
    expect(res.body).toEqual(unknown.body);
    expect(await membershipsOf(outsider.reference)).toBe(1);
  });

  it("refuses a project admin's ownerEmail of another project's user, attaching nothing", async () => {
    const outsider = await memberOf(api.newProject());
    const res = await init(await api.newProject().token(), [
      { name: 'name', valueString: 'x' },
      { name: 'ownerEmail', valueString: outsider.email },
    ]);
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['Parameters.parameter']);
    expect(await membershipsOf(outsider.reference)).toBe(1);
  });

  it("lets a project admin name a user of the admin's own project", async () => {
    const home = api.newProject();
    const member = await memberOf(home);
    const res = await init(await home.token(), [
      { name: 'name', valueString: 'Second clinic' },
      { name: 'ownerEmail', valueString: member.email },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.owner.reference).toBe(member.reference);
  });

  it('lets a super admin name any user', async () => {
    const outsider = await memberOf(api.newProject());
    const res = await init(await api.superAdmin.token(), [
      { name: 'name', valueString: 'Theirs' },
      { name: 'owner', valueReference: { reference: outsider.reference } },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(await membershipsOf(outsider.reference)).toBe(2);
  });
});
