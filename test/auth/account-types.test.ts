import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { projectClient, useTestServer, type ProjectClient, type TestResponse } from '../helpers/server.js';
import { graphql } from '../graphql/resource-helpers.js';
import { addMemberClient, bearer, getJson } from './helpers.js';

/**
 * The account types as Medplum guards them: Login (a sign-in's secrets) is for super admins only;
 * Project, ProjectMembership and User are for project admins, hidden from other members whether
 * or not they have an AccessPolicy. Hidden from reads, searches of every kind, includes, GraphQL
 * and history; Flint's own flows (/auth/me) still work for the member.
 */

const api = await useTestServer();

const ADMIN_TYPES = ['Project', 'ProjectMembership', 'User'];
const HIDDEN_FROM_MEMBERS = ['Login', ...ADMIN_TYPES];

interface Member {
  admin: ProjectClient;
  member: ProjectClient;
  token: string;
  clientId: string;
  loginId: string;
  membershipId: string;
}

/** A project and a member of it without an AccessPolicy (or with the rules given), not admin. */
async function projectWithMember(rules?: unknown[]): Promise<Member> {
  const admin = api.newProject();
  let accessPolicy: string | undefined;
  if (rules) {
    const policy = await admin.post('/AccessPolicy', { resourceType: 'AccessPolicy', name: 'member', resource: rules });
    accessPolicy = `AccessPolicy/${policy.body.id}`;
  }
  const { token, clientId } = await addMemberClient(api, admin, accessPolicy ? { accessPolicy } : {});
  const member = projectClient(api.fhir, admin.projectId, async () => token);
  const membership = await admin.get(`/ProjectMembership?profile=ClientApplication/${clientId}`);
  expect(membership.status, membership.text).toBe(200);
  const loginId = decodeJwt(token).login_id as string;
  return { admin, member, token, clientId, loginId, membershipId: membership.body.entry[0].resource.id };
}

function expectForbidden(res: TestResponse<any>, type: string): void {
  expect(res.status, res.text).toBe(403);
  expect(res.body.resourceType).toBe('OperationOutcome');
  expect(res.body.issue[0].code).toBe('forbidden');
  expect(res.body.issue[0].details.text).toContain(type);
}

/** A User scoped to the admin's project, created by the admin; its id. */
async function projectUser(admin: ProjectClient): Promise<string> {
  const user = await admin.post('/User', {
    resourceType: 'User',
    firstName: 'Project',
    lastName: 'User',
    email: `user-${admin.projectId}@example.com`,
    project: { reference: `Project/${admin.projectId}` },
  });
  expect(user.status, user.text).toBe(201);
  return user.body.id;
}

const typesOf = (bundle: { entry?: { resource?: { resourceType: string }; fullUrl?: string }[] }) =>
  new Set((bundle.entry ?? []).map((entry) => entry.resource?.resourceType ?? entry.fullUrl?.split('/').at(-2)));

describe('a member who is not a project admin, without an AccessPolicy', () => {
  it('is refused (403) every read of Login, Project, ProjectMembership and User, its own Login and membership included', async () => {
    const { admin, member, loginId, membershipId } = await projectWithMember();
    for (const type of HIDDEN_FROM_MEMBERS) {
      expectForbidden(await member.get(`/${type}`), type);
      expectForbidden(await member.get(`/${type}/_history`), type);
    }
    expectForbidden(await member.get(`/Login/${loginId}`), 'Login');
    expectForbidden(await member.get(`/Login/${loginId}/_history`), 'Login');
    expectForbidden(await member.get(`/Login/${loginId}/_history/1`), 'Login');
    expectForbidden(await member.get(`/ProjectMembership/${membershipId}`), 'ProjectMembership');
    expectForbidden(await member.get(`/Project/${admin.projectId}`), 'Project');
    expectForbidden(await member.get('/?_type=Login'), 'Login');
  });

  it('finds none of them by a search of every type, a system history, includes or a chain', async () => {
    const { member, clientId } = await projectWithMember();
    const everything = await member.get('/?_count=1000');
    expect(everything.status, everything.text).toBe(200);
    const history = await member.get('/_history?_count=1000');
    expect(history.status, history.text).toBe(200);
    for (const type of HIDDEN_FROM_MEMBERS) {
      expect(typesOf(everything.body).has(type), type).toBe(false);
      expect(typesOf(history.body).has(type), type).toBe(false);
    }
    expect(typesOf(history.body).has('ClientApplication')).toBe(true);
    const included = await member.get(`/ClientApplication?_id=${clientId}&_revinclude=ProjectMembership:profile&_revinclude=Login:user`);
    expect(included.status, included.text).toBe(200);
    expect([...typesOf(included.body)]).toEqual(['ClientApplication']);
    expectForbidden(await member.get(`/ClientApplication?_has:ProjectMembership:profile:_id=x`), 'ProjectMembership');
  });

  it('gets none of them in a batch or through GraphQL, where me.project is null', async () => {
    const { member, loginId, membershipId } = await projectWithMember();
    const batch = await member.post('/', {
      resourceType: 'Bundle',
      type: 'batch',
      entry: [{ request: { method: 'GET', url: `Login/${loginId}` } }, { request: { method: 'GET', url: `ProjectMembership/${membershipId}` } }],
    });
    expect(batch.status, batch.text).toBe(200);
    expect(batch.body.entry.map((entry: { response: { status: string } }) => entry.response.status)).toEqual(['403 Forbidden', '403 Forbidden']);
    for (const type of HIDDEN_FROM_MEMBERS) {
      const list = await graphql(api, member, `{ ${type}List { id } }`);
      expect(list.body.errors?.[0]?.message, type).toContain(type);
    }
    const read = await graphql(api, member, `{ Login(id: "${loginId}") { id code } }`);
    expect(read.body.errors?.[0]?.message).toContain('Login');
    const me = await graphql(api, member, '{ me { project { id } membership } }');
    expect(me.body.errors).toBeUndefined();
    expect(me.body.data.me).toEqual({ project: null, membership: `ProjectMembership/${membershipId}` });
  });

  it('still gets its session from /auth/me, read as the system', async () => {
    const { admin, token, membershipId } = await projectWithMember();
    const me = await getJson(api, '/auth/me', bearer(token));
    expect(me.status, JSON.stringify(me.body)).toBe(200);
    expect(me.body.project.id).toBe(admin.projectId);
    expect(me.body.membership.id).toBe(membershipId);
  });
});

describe('a member with an AccessPolicy', () => {
  it('is refused the project admin types even when its policy names them (as Medplum drops such rules)', async () => {
    const { member, membershipId } = await projectWithMember([{ resourceType: '*' }, { resourceType: 'ProjectMembership' }, { resourceType: 'User', readonly: true }, { resourceType: 'Login' }]);
    expectForbidden(await member.get('/ProjectMembership'), 'ProjectMembership');
    expectForbidden(await member.get(`/ProjectMembership/${membershipId}`), 'ProjectMembership');
    expectForbidden(await member.get('/User'), 'User');
    expectForbidden(await member.get('/Login'), 'Login');
    const history = await member.get('/_history?_count=1000');
    expect(history.status, history.text).toBe(200);
    for (const type of HIDDEN_FROM_MEMBERS) expect(typesOf(history.body).has(type), type).toBe(false);
  });
});

describe('a project admin', () => {
  it('reads its project, memberships and users, but not Logins (super admins only)', async () => {
    const { admin, loginId, membershipId } = await projectWithMember();
    expect((await admin.get(`/Project/${admin.projectId}`)).status).toBe(200);
    expect((await admin.get(`/ProjectMembership/${membershipId}`)).status).toBe(200);
    expect((await admin.get('/User')).status).toBe(200);
    expectForbidden(await admin.get('/Login'), 'Login');
    expectForbidden(await admin.get(`/Login/${loginId}`), 'Login');
    const history = await admin.get('/_history?_count=1000');
    expect(typesOf(history.body).has('Login')).toBe(false);
    expect(typesOf(history.body).has('ProjectMembership')).toBe(true);
    const everything = await admin.get('/?_count=1000');
    expect(typesOf(everything.body).has('Login')).toBe(false);
  });

  it('reads UserSecurityRequests but is refused (403) creating one', async () => {
    const { admin } = await projectWithMember();
    const userId = await projectUser(admin);
    expect((await admin.get('/UserSecurityRequest')).status).toBe(200);
    const request = { resourceType: 'UserSecurityRequest', type: 'reset', user: { reference: `User/${userId}` }, secret: 'chosen-by-admin' };
    expectForbidden(await admin.post('/UserSecurityRequest', request), 'UserSecurityRequest');
  });

  it('the super admin writes a UserSecurityRequest', async () => {
    const { admin } = await projectWithMember();
    const user = await api.superAdmin.post('/User', { resourceType: 'User', firstName: 'Wide', lastName: 'User', email: `usr-${admin.projectId}@example.com` });
    expect(user.status, user.text).toBe(201);
    const created = await api.superAdmin.post('/UserSecurityRequest', {
      resourceType: 'UserSecurityRequest',
      type: 'reset',
      user: { reference: `User/${user.body.id}` },
      secret: 'server-chosen',
    });
    expect(created.status, created.text).toBe(201);
  });

  it('the super admin reads a Login', async () => {
    const { loginId } = await projectWithMember();
    const login = await api.superAdmin.get(`/Login/${loginId}`);
    expect(login.status, login.text).toBe(200);
    expect(login.body.resourceType).toBe('Login');
  });
});

describe('a project admin with an AccessPolicy that does not list the account types', () => {
  /** An admin membership of a fresh project whose policy allows Patients only (and ProjectMembership read-only). */
  async function policyAdmin() {
    const owner = api.newProject();
    const policy = await owner.post('/AccessPolicy', {
      resourceType: 'AccessPolicy',
      name: 'admin with a narrow policy',
      resource: [{ resourceType: 'Patient' }, { resourceType: 'ProjectMembership', readonly: true }],
    });
    const { token, clientId } = await addMemberClient(api, owner, { admin: true, accessPolicy: `AccessPolicy/${policy.body.id}` });
    return { owner, clientId, admin: projectClient(api.fhir, owner.projectId, async () => token) };
  }

  it('reads its project, searches its memberships and users', async () => {
    const { owner, admin, clientId } = await policyAdmin();
    const project = await admin.get(`/Project/${owner.projectId}`);
    expect(project.status, project.text).toBe(200);
    const memberships = await admin.get(`/ProjectMembership?profile=ClientApplication/${clientId}`);
    expect(memberships.status, memberships.text).toBe(200);
    expect(memberships.body.entry).toHaveLength(1);
    const users = await admin.get('/User');
    expect(users.status, users.text).toBe(200);
  });

  it('gets its project as me.project in GraphQL', async () => {
    const { owner, admin } = await policyAdmin();
    const me = await graphql(api, admin, '{ me { project { id } } }');
    expect(me.body.errors).toBeUndefined();
    expect(me.body.data.me.project).toEqual({ id: owner.projectId });
  });

  it('creates and updates memberships, its policy listing them read-only notwithstanding', async () => {
    const { owner, admin } = await policyAdmin();
    const client = await owner.post('/ClientApplication', { resourceType: 'ClientApplication', name: 'another app' });
    const created = await admin.post('/ProjectMembership', {
      resourceType: 'ProjectMembership',
      project: { reference: `Project/${owner.projectId}` },
      user: { reference: `ClientApplication/${client.body.id}` },
      profile: { reference: `ClientApplication/${client.body.id}` },
    });
    expect(created.status, created.text).toBe(201);
    const updated = await admin.put(`/ProjectMembership/${created.body.id}`, { ...created.body, admin: true });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.admin).toBe(true);
  });

  it('creates a User scoped to its project', async () => {
    const { admin } = await policyAdmin();
    expect(await projectUser(admin)).toEqual(expect.any(String));
  });

  it('does not write UserSecurityRequests, its policy naming them notwithstanding', async () => {
    const owner = api.newProject();
    const policy = await owner.post('/AccessPolicy', {
      resourceType: 'AccessPolicy',
      name: 'admin naming UserSecurityRequest',
      resource: [{ resourceType: 'UserSecurityRequest' }, { resourceType: 'User' }],
    });
    const { token } = await addMemberClient(api, owner, { admin: true, accessPolicy: `AccessPolicy/${policy.body.id}` });
    const admin = projectClient(api.fhir, owner.projectId, async () => token);
    const request = { resourceType: 'UserSecurityRequest', type: 'invite', user: { reference: `User/${await projectUser(admin)}` }, secret: 'chosen-by-admin' };
    expectForbidden(await admin.post('/UserSecurityRequest', request), 'UserSecurityRequest');
  });

  it('still writes neither its Project nor a server-wide User', async () => {
    const { owner, admin } = await policyAdmin();
    const project = await admin.get(`/Project/${owner.projectId}`);
    expectForbidden(await admin.put(`/Project/${owner.projectId}`, { ...project.body, name: 'renamed' }), 'Project');
    const user = await admin.post('/User', { resourceType: 'User', firstName: 'Ser', lastName: 'Ver', email: `wide-${owner.projectId}@example.com` });
    expect(user.status, user.text).toBe(403);
  });

  it('is still refused the other types its policy does not list', async () => {
    const { admin } = await policyAdmin();
    expectForbidden(await admin.get('/Observation'), 'Observation');
  });
});
