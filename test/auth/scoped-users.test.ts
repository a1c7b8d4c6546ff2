import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { useTestServer, type ProjectClient } from '../helpers/server.js';
import { bearer, getJson, sendJson, tokenRequest } from './helpers.js';

/**
 * User.email is unique within the User's scope, as Medplum scopes users: once among server-wide
 * Users (no `project`) and once per project among the Users scoped to it (`project` set: patients
 * signed up or invited to it). Sign-in looks up the User of the named project first, then the
 * server-wide one, and never lands in a project the User is not a member of.
 */
const api = await useTestServer({ ALLOW_SIGN_UP: 'true' });
const PASSWORD = 'correct horse battery staple';

/** A project that takes patient sign-ups (its super admin sets defaultPatientAccessPolicy). */
async function openProject(): Promise<ProjectClient> {
  const admin = api.newProject();
  const policy = await admin.post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'Patients', resource: [{ resourceType: 'Patient', criteria: 'Patient?_id=%patient.id' }] });
  expect(policy.status, JSON.stringify(policy.body)).toBe(201);
  const project = (await api.superAdmin.get(`/Project/${admin.projectId}`)).body;
  const updated = await api.superAdmin.put(`/Project/${admin.projectId}`, { ...project, defaultPatientAccessPolicy: { reference: `AccessPolicy/${policy.body.id}` } });
  expect(updated.status, JSON.stringify(updated.body)).toBe(200);
  return admin;
}

/** Signs `email` up as a patient of the project, to the end; the partial login's answers. */
async function signUpPatient(projectId: string, email: string, password = PASSWORD): Promise<void> {
  const user = await sendJson(api, 'POST', '/auth/newuser', { firstName: 'Pat', lastName: 'Ient', email, password, projectId });
  expect(user.status, JSON.stringify(user.body)).toBe(200);
  const patient = await sendJson(api, 'POST', '/auth/newpatient', { login: user.body.login, projectId });
  expect(patient.status, JSON.stringify(patient.body)).toBe(200);
}

/** Invites `email` to the project with a password; the membership. */
async function invite(admin: ProjectClient, resourceType: string, email: string, password = PASSWORD): Promise<any> {
  const body = { resourceType, firstName: 'In', lastName: 'Vited', externalId: randomUUID(), email, password };
  const res = await sendJson(api, 'POST', `/admin/projects/${admin.projectId}/invite`, body, bearer(await admin.token()));
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

const signIn = (email: string, project?: string, password = PASSWORD) =>
  tokenRequest(api, { grant_type: 'password', username: email, password, ...(project ? { project } : {}) });

async function usersWith(email: string): Promise<any[]> {
  const res = await getJson(api, `/fhir/R4/User?email=${encodeURIComponent(email)}`, bearer(await api.superAdmin.token()));
  expect(res.status).toBe(200);
  return (res.body.entry ?? []).map((e: any) => e.resource);
}

describe('User.email is unique per scope', () => {
  it('takes one server-wide User and one User per project with the email; a second in a scope is 409 naming the field', async () => {
    const first = api.newProject();
    const second = api.newProject();
    const email = `${randomUUID()}@example.org`;
    const user = (project?: string) => ({ resourceType: 'User', firstName: 'S', lastName: 'Cope', email, ...(project ? { project: { reference: `Project/${project}` } } : {}) });
    // Server-wide Users are written by super admins (test/auth/server-wide-users.test.ts).
    expect((await api.superAdmin.post('/User', user())).status).toBe(201);
    expect((await first.post('/User', user(first.projectId))).status).toBe(201);
    expect((await second.post('/User', user(second.projectId))).status).toBe(201);
    const clash = await first.post('/User', { ...user(first.projectId), email: email.toUpperCase() });
    expect(clash.status, JSON.stringify(clash.body)).toBe(409);
    expect(clash.body.issue[0]).toMatchObject({ code: 'conflict', expression: ['User.email'] });
    expect(clash.body.issue[0].diagnostics ?? clash.body.issue[0].details?.text).toContain(`Project/${first.projectId}`);
    expect((await api.superAdmin.post('/User', user())).status).toBe(409);
    expect(await usersWith(email)).toHaveLength(3);
  });

  it("refuses a User scoped to a project other than the one it is written in (400 naming User.project), writing nothing", async () => {
    const admin = api.newProject();
    const other = api.newProject();
    const email = `${randomUUID()}@example.org`;
    const res = await admin.post('/User', { resourceType: 'User', firstName: 'S', lastName: 'Quat', email, project: { reference: `Project/${other.projectId}` } });
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.issue[0]).toMatchObject({ code: 'invalid', expression: ['User.project'] });
    expect(await usersWith(email)).toHaveLength(0);
    expect((await other.post('/User', { resourceType: 'User', firstName: 'S', lastName: 'Cope', email, project: { reference: `Project/${other.projectId}` } })).status).toBe(201);
  });
});

describe('signing up and in with an email used in another scope', () => {
  it('lets a practitioner sign up as a patient of a project with the same email, and each sign-in lands in its own account', async () => {
    const work = api.newProject();
    const clinic = await openProject();
    const email = `${randomUUID()}@example.org`;
    const staff = await invite(work, 'Practitioner', email, 'practitioner password');
    await signUpPatient(clinic.projectId, email);
    // Named project: the User scoped to it, with its own password.
    const patient = await signIn(email, clinic.projectId);
    expect(patient.status, JSON.stringify(patient.body)).toBe(200);
    expect(patient.body.project.reference).toBe(`Project/${clinic.projectId}`);
    expect(patient.body.profile.reference).toMatch(/^Patient\//);
    // No project: the server-wide User (the practitioner).
    const practitioner = await signIn(email, undefined, 'practitioner password');
    expect(practitioner.status, JSON.stringify(practitioner.body)).toBe(200);
    expect(practitioner.body.profile.reference).toBe(staff.profile.reference);
    // The practitioner's password does not open the patient's account, nor the other way round.
    expect((await signIn(email, clinic.projectId, 'practitioner password')).status).toBe(400);
    expect((await signIn(email)).status).toBe(400);
    expect(await usersWith(email)).toHaveLength(2);
  });

  it('lets one email sign up as a patient of two projects; each sign-in names its project', async () => {
    const [a, b] = [await openProject(), await openProject()];
    const email = `${randomUUID()}@example.org`;
    await signUpPatient(a.projectId, email, 'password of a');
    await signUpPatient(b.projectId, email, 'password of b');
    const inA = await signIn(email, a.projectId, 'password of a');
    expect(inA.status, JSON.stringify(inA.body)).toBe(200);
    expect(inA.body.project.reference).toBe(`Project/${a.projectId}`);
    const inB = await signIn(email, b.projectId, 'password of b');
    expect(inB.status, JSON.stringify(inB.body)).toBe(200);
    expect(inB.body.project.reference).toBe(`Project/${b.projectId}`);
    // The User of another project is never found through a project: b's password in a is refused.
    expect((await signIn(email, a.projectId, 'password of b')).status).toBe(400);
  });

  it('still refuses a second sign-up to the same project (409)', async () => {
    const clinic = await openProject();
    const email = `${randomUUID()}@example.org`;
    await signUpPatient(clinic.projectId, email);
    const again = await sendJson(api, 'POST', '/auth/newuser', { firstName: 'A', lastName: 'B', email, password: 'another password', projectId: clinic.projectId });
    expect(again.status).toBe(409);
  });

  it('signs a User in to a project only through its membership there, whatever its scope', async () => {
    const home = await openProject();
    const other = api.newProject();
    const email = `${randomUUID()}@example.org`;
    await signUpPatient(home.projectId, email);
    const refused = await signIn(email, other.projectId);
    expect(refused.status).toBe(400);
    expect(refused.body.access_token).toBeUndefined();
    // A User made scoped to one project and given a membership in another (as invites did before
    // emails were scoped) still signs in there: the membership decides, not the scope.
    const [user] = await usersWith(email);
    const profile = await other.post('/Practitioner', { resourceType: 'Practitioner', name: [{ family: 'Elsewhere' }] });
    const written = await other.post('/ProjectMembership', {
      resourceType: 'ProjectMembership',
      project: { reference: `Project/${other.projectId}` },
      user: { reference: `User/${user.id}` },
      profile: { reference: `Practitioner/${profile.body.id}` },
    });
    expect(written.status, JSON.stringify(written.body)).toBe(201);
    const member = await signIn(email, other.projectId);
    expect(member.status, JSON.stringify(member.body)).toBe(200);
    expect(member.body.project.reference).toBe(`Project/${other.projectId}`);
  });

  it('invites a patient as a User scoped to the project, apart from the server-wide User of the email', async () => {
    const work = api.newProject();
    const clinic = api.newProject();
    const email = `${randomUUID()}@example.org`;
    const staff = await invite(work, 'Practitioner', email, 'practitioner password');
    const patient = await invite(clinic, 'Patient', email, 'patient password');
    expect(patient.user.reference).not.toBe(staff.user.reference);
    const scoped = await api.superAdmin.get(`/${patient.user.reference}`);
    expect(scoped.body.project).toEqual({ reference: `Project/${clinic.projectId}` });
    const serverWide = await api.superAdmin.get(`/${staff.user.reference}`);
    expect(serverWide.body.project).toBeUndefined();
    const signedIn = await signIn(email, clinic.projectId, 'patient password');
    expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200);
    expect(signedIn.body.profile.reference).toBe(patient.profile.reference);
  });
});
