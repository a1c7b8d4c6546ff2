import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { MedplumClient, OperationOutcomeError } from '@medplum/core';
import { describe, expect, it } from 'vitest';
import type { Bundle, Resource } from '../helpers/client-shapes.js';
import { useMedplumSessionStorage } from '../helpers/medplum-session.js';
import { patientBody, TEST_SUPER_ADMIN, useTestServer, type ProjectClient } from '../helpers/server.js';
import { bearer, sendJson } from '../auth/helpers.js';

/**
 * Medplum's own TypeScript client (`@medplum/core` MedplumClient), used as its documentation shows,
 * against Flint: its logins (client credentials, password with PKCE), then what an app does with
 * them. The client decides the URLs, headers and bodies; the tests check what it gets back.
 */

const api = await useTestServer();
const MRN = 'http://example.org/mrn';
const PASSWORD = 'correct horse battery staple';

useMedplumSessionStorage();

/** A new client of the test server; no response cache, so that every read reaches the server. */
function newClient(): MedplumClient {
  return new MedplumClient({ baseUrl: `${api.url}/`, fetch, cacheTime: 0 });
}

/** A client signed in by client credentials as a new project's admin ClientApplication. */
async function projectAdminClient(): Promise<{ medplum: MedplumClient; project: ProjectClient; clientId: string }> {
  const project = api.newProject();
  const { clientId, clientSecret } = await api.credentialsOf(project);
  const medplum = newClient();
  await medplum.startClientLogin(clientId, clientSecret);
  return { medplum, project, clientId };
}

/** A Practitioner user with a password, invited into the project by its admin. */
async function invitePractitioner(project: ProjectClient): Promise<{ email: string; profile: string }> {
  const email = `${randomUUID()}@example.org`;
  const res = await sendJson(
    api,
    'POST',
    `/admin/projects/${project.projectId}/invite`,
    { resourceType: 'Practitioner', firstName: 'Grace', lastName: 'Hopper', externalId: randomUUID(), email, password: PASSWORD },
    bearer(await project.token()),
  );
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { email, profile: res.body.profile.reference };
}

/** The rejection of a client call, which must be an OperationOutcomeError. */
async function failureOf(call: Promise<unknown>): Promise<OperationOutcomeError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(OperationOutcomeError);
  return error as OperationOutcomeError;
}

describe('MedplumClient logins', () => {
  it('startClientLogin resolves to the ClientApplication profile, and getProfile() returns it', async () => {
    const project = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(project);
    const medplum = newClient();
    const profile: Resource = await medplum.startClientLogin(clientId, clientSecret);
    expect(profile).toMatchObject({ resourceType: 'ClientApplication', id: clientId });
    expect(medplum.getProfile()).toMatchObject({ resourceType: 'ClientApplication', id: clientId });
    expect((medplum.getProfile() as Resource).secret).toBeUndefined();
    expect(medplum.getProject()?.id).toBe(project.projectId);
    expect(medplum.isProjectAdmin()).toBe(true);
    expect(medplum.isSuperAdmin()).toBe(false);
    expect(medplum.getUserConfiguration()?.resourceType).toBe('UserConfiguration');
  });

  it('startClientLogin with the credentials in a Basic header (authCredentialsMethod: header)', async () => {
    const project = api.newProject();
    const { clientId, clientSecret } = await api.credentialsOf(project);
    const medplum = new MedplumClient({ baseUrl: `${api.url}/`, fetch, cacheTime: 0, authCredentialsMethod: 'header' });
    const profile: Resource = await medplum.startClientLogin(clientId, clientSecret);
    expect(profile).toMatchObject({ resourceType: 'ClientApplication', id: clientId });
  });

  it('startClientLogin with a wrong secret rejects, and the client stays signed out', async () => {
    const project = api.newProject();
    const { clientId } = await api.credentialsOf(project);
    const medplum = newClient();
    await failureOf(medplum.startClientLogin(clientId, 'wrong secret'));
    expect(medplum.getProfile()).toBeUndefined();
    expect(medplum.getAccessToken()).toBeUndefined();
  });

  it('password login with PKCE: startLogin gives a code, processCode exchanges it and loads the Practitioner profile', async () => {
    const project = api.newProject();
    const { email, profile } = await invitePractitioner(project);
    const medplum = newClient();
    // Outside a browser the client cannot hash its verifier and sends it as a `plain` challenge.
    const login = await medplum.startLogin({ email, password: PASSWORD });
    expect(login).toEqual({ login: expect.any(String), code: expect.any(String) });
    const signedIn: Resource = await medplum.processCode(login.code!);
    expect(`${signedIn.resourceType}/${signedIn.id}`).toBe(profile);
    expect(medplum.getProfile()?.name).toEqual([{ given: ['Grace'], family: 'Hopper' }]);
    expect(medplum.getProject()?.id).toBe(project.projectId);
    expect(medplum.isProjectAdmin()).toBe(false);
    // The signed-in user works through the client like any other.
    const created = await medplum.createResource(patientBody() as Resource);
    expect(created.meta?.versionId).toBeDefined();
  });

  it('password login with an S256 challenge, as the client sends from a browser', async () => {
    const project = api.newProject();
    const { email, profile } = await invitePractitioner(project);
    const medplum = newClient();
    // What startPkce() keeps and sends where it can hash: the verifier in sessionStorage, its S256 hash.
    const verifier = randomBytes(48).toString('base64url');
    sessionStorage.setItem('codeVerifier', verifier);
    const codeChallenge = createHash('sha256').update(verifier).digest('base64url');
    const login = await medplum.startLogin({ email, password: PASSWORD, codeChallenge, codeChallengeMethod: 'S256' });
    const signedIn: Resource = await medplum.processCode(login.code!);
    expect(`${signedIn.resourceType}/${signedIn.id}`).toBe(profile);
  });

  it('password login with a wrong password rejects with the OperationOutcome', async () => {
    const project = api.newProject();
    const { email } = await invitePractitioner(project);
    const error = await failureOf(newClient().startLogin({ email, password: 'not the password' }));
    expect(error.outcome.issue?.[0]?.code).toBe('login');
  });

  it('refreshIfExpired trades the refresh token for a new access token, and the client keeps working', async () => {
    const project = api.newProject();
    const { email } = await invitePractitioner(project);
    const medplum = newClient();
    await medplum.processCode((await medplum.startLogin({ email, password: PASSWORD })).code!);
    const before = medplum.getAccessToken();
    // A grace period longer than the token's life makes the client treat it as expiring now.
    await medplum.refreshIfExpired(2 * 3600_000);
    expect(medplum.getAccessToken()).not.toBe(before);
    expect(medplum.getProfile()?.resourceType).toBe('Practitioner');
    const created: Resource = await medplum.createResource(patientBody() as Resource);
    expect(created.id).toBeDefined();
  });

  it('signOut ends the login: the old token is refused and the client holds no profile', async () => {
    const project = api.newProject();
    const { email } = await invitePractitioner(project);
    const medplum = newClient();
    await medplum.processCode((await medplum.startLogin({ email, password: PASSWORD })).code!);
    const token = medplum.getAccessToken()!;
    await medplum.signOut();
    expect(medplum.getProfile()).toBeUndefined();
    expect(medplum.getActiveLogin()).toBeUndefined();
    const me = await api.raw('/auth/me', { headers: bearer(token) });
    expect(me.status).toBe(401);
  });
});

describe('MedplumClient data calls', () => {
  it('createResource, readResource, updateResource, patchResource and deleteResource', async () => {
    const { medplum } = await projectAdminClient();
    const created: Resource = await medplum.createResource(patientBody({ gender: 'male' }) as Resource);
    expect(created.id).toBeDefined();
    const read: Resource = await medplum.readResource('Patient', created.id!);
    expect(read).toMatchObject({ id: created.id, gender: 'male', meta: { versionId: created.meta?.versionId } });
    const updated: Resource = await medplum.updateResource({ ...read, gender: 'female' });
    expect(updated.gender).toBe('female');
    expect(updated.meta?.versionId).not.toBe(created.meta?.versionId);
    const patched: Resource = await medplum.patchResource('Patient', created.id!, [
      { op: 'test', path: '/meta/versionId', value: updated.meta?.versionId },
      { op: 'replace', path: '/gender', value: 'other' },
    ]);
    expect(patched.gender).toBe('other');
    await medplum.deleteResource('Patient', created.id!);
    const gone = await failureOf(medplum.readResource('Patient', created.id!));
    expect(gone.outcome.issue?.[0]?.severity).toBe('error');
  });

  it('readHistory and readVersion list and read the versions of a resource', async () => {
    const { medplum } = await projectAdminClient();
    const created: Resource = await medplum.createResource(patientBody() as Resource);
    const updated: Resource = await medplum.updateResource({ ...created, gender: 'female' });
    const history: Bundle = await medplum.readHistory('Patient', created.id!);
    expect(history.entry?.map((e) => e.resource?.meta?.versionId)).toEqual([updated.meta?.versionId, created.meta?.versionId]);
    const first: Resource = await medplum.readVersion('Patient', created.id!, created.meta!.versionId!);
    expect(first.gender).toBe('male');
  });

  it('createBinary stores bytes that download gives back', async () => {
    const { medplum } = await projectAdminClient();
    const binary: Resource = await medplum.createBinary({ data: 'hello from medplum', contentType: 'text/plain' });
    expect(binary).toMatchObject({ resourceType: 'Binary', contentType: 'text/plain' });
    const blob = await medplum.download(`Binary/${binary.id}`);
    expect(await blob.text()).toBe('hello from medplum');
  });

  it('invite adds a user to the project, who can then sign in', async () => {
    const { medplum, project } = await projectAdminClient();
    const email = `${randomUUID()}@example.org`;
    const membership: Resource = await medplum.invite(project.projectId, {
      resourceType: 'Practitioner',
      firstName: 'Ada',
      lastName: 'Lovelace',
      email,
      password: PASSWORD,
      externalId: randomUUID(),
    } as Parameters<MedplumClient['invite']>[1]);
    expect(membership.resourceType).toBe('ProjectMembership');
    const user = newClient();
    const profile: Resource = await user.processCode((await user.startLogin({ email, password: PASSWORD })).code!);
    expect(`${profile.resourceType}/${profile.id}`).toBe(membership.profile.reference);
  });

  it('createResource of an invalid resource rejects with the OperationOutcome naming where', async () => {
    const { medplum } = await projectAdminClient();
    const error = await failureOf(medplum.createResource(patientBody({ gender: 'robot' }) as Resource));
    expect(JSON.stringify(error.outcome)).toContain('gender');
  });

  it('searchResources, searchOne and search (a Bundle) find what the client wrote', async () => {
    const { medplum } = await projectAdminClient();
    const mrn = randomUUID();
    const patient: Resource = await medplum.createResource(patientBody({ identifier: [{ system: MRN, value: mrn }] }) as Resource);
    await medplum.createResource(patientBody() as Resource);
    const query = { identifier: `${MRN}|${mrn}` };
    expect((await medplum.searchResources('Patient', query)).map((p: Resource) => p.id)).toEqual([patient.id]);
    expect((await medplum.searchOne('Patient', query))?.id).toBe(patient.id);
    const bundle: Bundle = await medplum.search('Patient', `identifier=${encodeURIComponent(`${MRN}|${mrn}`)}&_total=accurate`);
    expect(bundle).toMatchObject({ resourceType: 'Bundle', type: 'searchset', total: 1 });
    expect(bundle.entry?.map((e) => e.resource?.id)).toEqual([patient.id]);
  });

  it('searchResourcePages follows the Bundle next links', async () => {
    const { medplum } = await projectAdminClient();
    const family = `Pages${randomUUID().replace(/-/g, '')}`;
    for (let i = 0; i < 3; i++) await medplum.createResource(patientBody({ name: [{ family }] }) as Resource);
    const pages: number[] = [];
    for await (const page of medplum.searchResourcePages('Patient', { family, _count: '2' })) pages.push(page.length);
    expect(pages).toEqual([2, 1]);
  });

  it('graphql runs a query at fhir/R4/$graphql', async () => {
    const { medplum } = await projectAdminClient();
    const mrn = randomUUID();
    const patient: Resource = await medplum.createResource(patientBody({ identifier: [{ system: MRN, value: mrn }] }) as Resource);
    // Flint's list search arguments are [String!] (a literal string is coerced to a list).
    const result = await medplum.graphql(`{ PatientList(identifier: ${JSON.stringify(`${MRN}|${mrn}`)}) { id name { family } } }`);
    expect(result.errors).toBeUndefined();
    expect(result.data.PatientList).toEqual([{ id: patient.id, name: [{ family: 'Chalmers' }] }]);
  });

  it('post to fhirUrl(Project, id, $clone) as the super admin copies the project under its new name', async () => {
    const { medplum: admin, project } = await projectAdminClient();
    const source: Resource = await admin.createResource(patientBody() as Resource);
    const superAdmin = newClient();
    await superAdmin.startClientLogin(TEST_SUPER_ADMIN.clientId, TEST_SUPER_ADMIN.clientSecret);
    expect(superAdmin.isSuperAdmin()).toBe(true);
    const name = `Clone ${randomUUID().slice(0, 8)}`;
    const clone: Resource = await superAdmin.post(superAdmin.fhirUrl('Project', project.projectId, '$clone'), { name });
    expect(clone).toMatchObject({ resourceType: 'Project', name });
    expect(clone.id).not.toBe(project.projectId);
    const copies = await superAdmin.searchResources('Patient', { _project: clone.id!, family: 'Chalmers' });
    expect(copies).toHaveLength(1);
    expect(copies[0].id).not.toBe(source.id);
  });

  it('a project admin\'s $clone call is refused with 403', async () => {
    const { medplum, project } = await projectAdminClient();
    const error = await failureOf(medplum.post(medplum.fhirUrl('Project', project.projectId, '$clone'), { name: 'mine' }));
    expect(error.outcome.issue?.[0]?.code).toBe('forbidden');
  });

  it('get of fhirUrl($versions) with Accept: application/json answers {versions, default}', async () => {
    const medplum = newClient();
    const versions = await medplum.get(medplum.fhirUrl('$versions'), { headers: { Accept: 'application/json' } });
    expect(versions).toEqual({ versions: ['4.0'], default: '4.0' });
  });
});
