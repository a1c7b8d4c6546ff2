import { randomUUID } from 'node:crypto';
import { MedplumClient } from '@medplum/core';
import { describe, expect, it } from 'vitest';
import type { Resource } from '../helpers/client-shapes.js';
import { useMedplumSessionStorage } from '../helpers/medplum-session.js';
import { patientBody, useTestServer, type ProjectClient } from '../helpers/server.js';
import { bearer, getJson, sendJson } from './helpers.js';

/**
 * Patients signing up to an existing project (`/auth/newuser` with `projectId`, then
 * `/auth/newpatient`), as MedplumClient's startNewUser and startNewPatient do it.
 */

const api = await useTestServer({ ALLOW_SIGN_UP: 'true' });
const closed = await useTestServer();
const PASSWORD = 'correct horse battery staple';

useMedplumSessionStorage();

/** What Medplum's patient policies look like: each patient sees their own record and compartment. */
const PATIENT_POLICY = {
  resourceType: 'AccessPolicy',
  name: 'Patients',
  resource: [
    { resourceType: 'Patient', criteria: 'Patient?_id=%patient.id' },
    { resourceType: 'Observation', criteria: 'Observation?_compartment=%patient' },
  ],
};

/** A project that takes patient sign-ups (its super admin sets defaultPatientAccessPolicy, as Project is theirs to write). */
async function openProject(): Promise<{ admin: ProjectClient; policyId: string }> {
  const admin = api.newProject();
  const policy = await admin.post('/AccessPolicy', PATIENT_POLICY);
  expect(policy.status, JSON.stringify(policy.body)).toBe(201);
  const project = (await api.superAdmin.get(`/Project/${admin.projectId}`)).body;
  const updated = await api.superAdmin.put(`/Project/${admin.projectId}`, { ...project, defaultPatientAccessPolicy: { reference: `AccessPolicy/${policy.body.id}` } });
  expect(updated.status, JSON.stringify(updated.body)).toBe(200);
  return { admin, policyId: policy.body.id };
}

const newMedplum = () => new MedplumClient({ baseUrl: `${api.url}/`, fetch, cacheTime: 0 });

function userBody(extra: Record<string, string> = {}): Record<string, string> {
  return { firstName: 'Grace', lastName: 'Hopper', email: `${randomUUID()}@example.org`, password: PASSWORD, recaptchaToken: 'unused', ...extra };
}

describe('patient sign-up with MedplumClient', () => {
  it('startNewUser with projectId, startNewPatient and processCode give a patient session with the project policy', async () => {
    const { admin, policyId } = await openProject();
    const other = await admin.post('/Patient', patientBody());
    const medplum = newMedplum();
    const body = userBody({ projectId: admin.projectId });
    const user = await medplum.startNewUser(body as never);
    const started = await medplum.startNewPatient({ login: user.login, projectId: admin.projectId });
    const profile: Resource = await medplum.processCode(started.code!);
    expect(profile).toMatchObject({ resourceType: 'Patient', name: [{ given: ['Grace'], family: 'Hopper' }], telecom: [{ system: 'email', value: body.email }] });
    expect(medplum.getProject()?.id).toBe(admin.projectId);
    expect(medplum.isProjectAdmin()).toBe(false);
    expect(medplum.getAccessPolicy()?.id).toBe(policyId);
    // The policy's %patient is this patient: their own record and compartment, nobody else's.
    const patients = await medplum.searchResources('Patient');
    expect(patients.map((p) => p.id)).toEqual([profile.id]);
    await expect(medplum.readResource('Patient', other.body.id)).rejects.toThrow();
    const observation = await medplum.createResource({ resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference: `Patient/${profile.id}` } });
    expect(observation.id).toEqual(expect.any(String));
    await expect(
      medplum.createResource({ resourceType: 'Observation', status: 'final', code: { text: 'weight' }, subject: { reference: `Patient/${other.body.id}` } }),
    ).rejects.toThrow();
  });

  it('keeps the User in the project signed up to, where its admins see it', async () => {
    const { admin } = await openProject();
    const body = userBody({ projectId: admin.projectId });
    const user = await sendJson(api, 'POST', '/auth/newuser', body);
    expect(user.status, JSON.stringify(user.body)).toBe(200);
    const found = await admin.get(`/User?email=${encodeURIComponent(body.email)}`);
    expect(found.body.entry?.[0]?.resource).toMatchObject({ email: body.email, project: { reference: `Project/${admin.projectId}` } });
  });
});

describe('patient sign-up refusals', () => {
  it('refuses a project without defaultPatientAccessPolicy, naming projectId', async () => {
    const admin = api.newProject();
    await admin.token();
    const res = await sendJson(api, 'POST', '/auth/newuser', userBody({ projectId: admin.projectId }));
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['projectId']);
    expect(res.body.issue[0].details.text).toMatch(/defaultPatientAccessPolicy/);
  });

  it('refuses an unknown project and a client of another project', async () => {
    const unknown = await sendJson(api, 'POST', '/auth/newuser', userBody({ projectId: randomUUID() }));
    expect(unknown.status).toBe(400);
    expect(unknown.body.issue[0].expression).toEqual(['projectId']);
    const { admin } = await openProject();
    const { clientId } = await api.credentialsOf(api.newProject());
    const wrongClient = await sendJson(api, 'POST', '/auth/newuser', userBody({ projectId: admin.projectId, clientId }));
    expect(wrongClient.status).toBe(400);
    expect(wrongClient.body.issue[0].expression).toEqual(['clientId']);
  });

  it('refuses /auth/newproject for a patient sign-up and /auth/newpatient for an owner sign-up', async () => {
    const { admin } = await openProject();
    const patient = await sendJson(api, 'POST', '/auth/newuser', userBody({ projectId: admin.projectId }));
    const asProject = await sendJson(api, 'POST', '/auth/newproject', { login: patient.body.login, projectName: 'Mine' });
    expect(asProject.status).toBe(400);
    expect(asProject.body.issue[0].details.text).toMatch(/\/auth\/newpatient/);
    const owner = await sendJson(api, 'POST', '/auth/newuser', userBody());
    const asPatient = await sendJson(api, 'POST', '/auth/newpatient', { login: owner.body.login, projectId: admin.projectId });
    expect(asPatient.status).toBe(400);
    expect(asPatient.body.issue[0].expression).toEqual(['login']);
  });

  it('refuses a projectId other than the one signed up to', async () => {
    const first = await openProject();
    const second = await openProject();
    const user = await sendJson(api, 'POST', '/auth/newuser', userBody({ projectId: first.admin.projectId }));
    const res = await sendJson(api, 'POST', '/auth/newpatient', { login: user.body.login, projectId: second.admin.projectId });
    expect(res.status).toBe(400);
    expect(res.body.issue[0].expression).toEqual(['projectId']);
  });

  it('makes one membership: the same sign-up finished twice is 409 the second time', async () => {
    const { admin } = await openProject();
    const user = await sendJson(api, 'POST', '/auth/newuser', userBody({ projectId: admin.projectId }));
    const request = { login: user.body.login, projectId: admin.projectId };
    expect((await sendJson(api, 'POST', '/auth/newpatient', request)).status).toBe(200);
    const again = await sendJson(api, 'POST', '/auth/newpatient', request);
    expect(again.status).toBe(409);
    const memberships = await admin.get('/ProjectMembership?_count=100');
    expect(memberships.body.entry.filter((e: any) => e.resource.profile?.reference?.startsWith('Patient/'))).toHaveLength(1);
  });

  it('answers 404 when sign-up is off', async () => {
    const res = await sendJson(closed, 'POST', '/auth/newpatient', { login: 'x', projectId: randomUUID() });
    expect(res.status).toBe(404);
    expect(JSON.stringify(res.body.issue[0])).toContain('ALLOW_SIGN_UP');
  });
});

describe('an unfinished sign-up does not keep the email taken', () => {
  it('signing up again with the same email and password resumes it, and the project can then be made', async () => {
    const body = userBody();
    const first = await sendJson(api, 'POST', '/auth/newuser', body);
    expect(first.status).toBe(200);
    const again = await sendJson(api, 'POST', '/auth/newuser', { ...body, firstName: 'Someone' });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const project = await sendJson(api, 'POST', '/auth/newproject', { login: again.body.login, projectName: 'Resumed' });
    expect(project.status).toBe(200);
    const login = await sendJson(api, 'POST', '/auth/login', { email: body.email, password: PASSWORD });
    expect(login.status, JSON.stringify(login.body)).toBe(200);
  });

  it('answers 409 to a sign-up again with another password', async () => {
    const body = userBody();
    expect((await sendJson(api, 'POST', '/auth/newuser', body)).status).toBe(200);
    const again = await sendJson(api, 'POST', '/auth/newuser', { ...body, password: 'another password entirely' });
    expect(again.status).toBe(409);
  });

  it('answers 409 once the sign-up was finished, even with the right password', async () => {
    const body = userBody();
    const first = await sendJson(api, 'POST', '/auth/newuser', body);
    expect((await sendJson(api, 'POST', '/auth/newproject', { login: first.body.login, projectName: 'Done' })).status).toBe(200);
    expect((await sendJson(api, 'POST', '/auth/newuser', body)).status).toBe(409);
  });

  it('resumes a patient sign-up to the same project, and not as another kind of sign-up', async () => {
    const { admin } = await openProject();
    const body = userBody({ projectId: admin.projectId });
    const first = await sendJson(api, 'POST', '/auth/newuser', body);
    expect(first.status).toBe(200);
    // Without a project it is another scope: the server-wide User of the email, not the patient's.
    const { projectId: _projectId, ...withoutProject } = body;
    const serverWide = await sendJson(api, 'POST', '/auth/newuser', withoutProject);
    expect(serverWide.status).toBe(200);
    expect(partialSubject(serverWide.body.login)).not.toBe(partialSubject(first.body.login));
    const again = await sendJson(api, 'POST', '/auth/newuser', body);
    expect(again.status).toBe(200);
    expect(partialSubject(again.body.login)).toBe(partialSubject(first.body.login));
    const finished = await sendJson(api, 'POST', '/auth/newpatient', { login: again.body.login, projectId: admin.projectId });
    expect(finished.status).toBe(200);
    const me = await getJson(api, '/auth/me', bearer(await codeToken(finished.body.code)));
    expect(me.body.profile.resourceType).toBe('Patient');
  });
});

/** The User a partial login (a signed JWT) is for. */
function partialSubject(login: string): string {
  return JSON.parse(Buffer.from(login.split('.')[1], 'base64url').toString()).sub;
}

async function codeToken(code: string): Promise<string> {
  const res = await api.raw('/oauth2/token', {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'authorization_code', code }),
  });
  const body = (await res.json()) as { access_token: string };
  return body.access_token;
}
