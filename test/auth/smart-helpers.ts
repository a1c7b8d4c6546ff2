import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { projectClient, type ProjectClient, type TestServer } from '../helpers/server.js';
import { addMemberClient, bearer, sendJson, tokenRequest, type JsonResponse } from './helpers.js';

export interface ScopedClient {
  /** The token response (`scope` says what was granted). */
  token: Record<string, any>;
  client: ProjectClient;
}

const asClient = (api: TestServer, projectId: string, token: Record<string, any>): ScopedClient => ({
  token,
  client: projectClient(api.fhir, projectId, async () => token.access_token as string),
});

/**
 * A non-admin user of the admin's project (a Practitioner), signed in by password with `scope`:
 * a token acting for a user, which user/ and patient/ scopes are for.
 */
export async function scopedMember(api: TestServer, admin: ProjectClient, scope: string, accessPolicy?: string): Promise<ScopedClient> {
  const user = await invitedUser(api, admin, 'Practitioner', accessPolicy);
  return user.client(scope);
}

/** A non-admin member client of the admin's project, signed in by client credentials (for itself) with `scope`. */
export async function scopedClient(api: TestServer, admin: ProjectClient, scope: string, accessPolicy?: string): Promise<ScopedClient> {
  const member = await addMemberClient(api, admin, accessPolicy ? { accessPolicy } : {});
  const res = await tokenRequest(api, { grant_type: 'client_credentials', client_id: member.clientId, client_secret: member.secret, scope });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return asClient(api, admin.projectId, res.body);
}

export interface PatientUser {
  patientId: string;
  email: string;
  password: string;
  /** Signs in with the password grant, asking for `scope`. */
  signIn(scope: string): Promise<JsonResponse>;
  /** Signs in asking for `scope`; the token must be granted. */
  client(scope: string): Promise<ScopedClient>;
}

/** A user of the admin's project whose profile is a Patient (the launch patient of its tokens). */
export async function patientUser(api: TestServer, admin: ProjectClient): Promise<PatientUser> {
  const user = await invitedUser(api, admin, 'Patient');
  return { ...user, patientId: user.profile.split('/')[1] };
}

export interface InvitedUser extends Omit<PatientUser, 'patientId'> {
  /** `Type/id` of the user's profile. */
  profile: string;
}

/** A user of the admin's project invited with a profile of `resourceType` (Patient, Practitioner...), who signs in by password. */
export async function invitedUser(api: TestServer, admin: ProjectClient, resourceType: string, accessPolicy?: string): Promise<InvitedUser> {
  const email = `${randomUUID()}@example.org`;
  const password = 'correct horse battery staple';
  const invited = await sendJson(
    api,
    'POST',
    `/admin/projects/${admin.projectId}/invite`,
    { resourceType, firstName: 'Pat', lastName: 'Ient', email, password, externalId: randomUUID(), ...(accessPolicy ? { accessPolicy: { reference: accessPolicy } } : {}) },
    bearer(await admin.token()),
  );
  expect(invited.status, JSON.stringify(invited.body)).toBe(201);
  const signIn = (scope: string) => tokenRequest(api, { grant_type: 'password', username: email, password, project: admin.projectId, scope });
  return {
    profile: invited.body.profile.reference as string,
    email,
    password,
    signIn,
    async client(scope) {
      const res = await signIn(scope);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return asClient(api, admin.projectId, res.body);
    },
  };
}

export const observationOf = (patientId: string, category = 'vital-signs') => ({
  resourceType: 'Observation',
  status: 'final',
  category: [{ coding: [{ system: 'http://terminology.hl7.org/CodeSystem/observation-category', code: category }] }],
  code: { text: 'heart rate' },
  subject: { reference: `Patient/${patientId}` },
});

/** The ids of a searchset's matches. */
export const idsOf = (bundle: { entry?: { resource: { id: string }; search?: { mode: string } }[] }) =>
  (bundle.entry ?? []).filter((e) => e.search?.mode !== 'include').map((e) => e.resource.id).sort();

/** A 403 OperationOutcome whose text names `scope`. */
export function expectScopeRefusal(res: { status: number; body: any }, scope: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(403);
  expect(res.body.resourceType).toBe('OperationOutcome');
  expect(res.body.issue[0].code).toBe('forbidden');
  expect(res.body.issue[0].details.text).toContain(scope);
}
