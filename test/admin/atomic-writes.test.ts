import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Resource } from '../../src/fhir/types.js';
import { useTestServer } from '../helpers/server.js';
import { bearer, getJson, sendJson, tokenRequest } from '../auth/helpers.js';

/**
 * Failures injected part-way through Project/$init and invite: a write of the resource `failOn`
 * picks fails, after earlier resources of the same request were written. The failures are real
 * ones of the write path: a validation error (400) or a unique violation of the row insert
 * (mapped to 409), raised where the server would raise them.
 */
const inject = vi.hoisted(() => ({
  failInsertOn: undefined as ((resource: Resource) => boolean) | undefined,
  failValidationOn: undefined as ((resource: Resource) => boolean) | undefined,
  /** Resource types written before the failure, in order (proves the failure is part-way). */
  written: [] as string[],
}));

vi.mock('../../src/storage/sql.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/storage/sql.js')>();
  return {
    ...original,
    insertFirstVersion: async (executor: Parameters<typeof original.insertFirstVersion>[0], resource: Resource) => {
      if (inject.failInsertOn?.(resource)) {
        // What PostgreSQL raises on a duplicate key (SQLSTATE 23505).
        throw Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' });
      }
      const text = await original.insertFirstVersion(executor, resource);
      inject.written.push(resource.resourceType);
      return text;
    },
  };
});

vi.mock('../../src/validation/validator.js', async (importOriginal) => {
  type Validator = typeof import('../../src/validation/validator.js');
  const original: Validator = await importOriginal<Validator>();
  const validate: Validator['validateResource'] = original.validateResource;
  return {
    ...original,
    validateResource: (resource: unknown, options?: Parameters<typeof original.validateResource>[1]) => {
      if (inject.failValidationOn?.(resource as Resource)) {
        // The genuine validator's answer to an invalid membership (admin must be a boolean).
        validate({ ...(resource as object), admin: 'yes' }, options);
      }
      validate(resource, options);
    },
  };
});

const api = await useTestServer();

afterEach(() => {
  inject.failInsertOn = undefined;
  inject.failValidationOn = undefined;
  inject.written = [];
});

const isMembership = (resource: Resource, test: (m: Record<string, any>) => boolean) =>
  resource.resourceType === 'ProjectMembership' && test(resource as Record<string, any>);

/** Search as the super admin (every project): the number of matches. */
async function count(query: string): Promise<number> {
  const res = await getJson(api, `/fhir/R4/${query}`, bearer(await api.superAdmin.token()));
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.entry?.length ?? 0;
}

const init = async (token: string, parameter: unknown[]) =>
  sendJson(api, 'POST', '/fhir/R4/Project/$init', { resourceType: 'Parameters', parameter }, { ...bearer(token), 'Content-Type': 'application/fhir+json' });

const invite = async (projectId: string, token: string, body: Record<string, unknown>) =>
  sendJson(api, 'POST', `/admin/projects/${projectId}/invite`, body, bearer(token));

async function credentialRows(prefix: string): Promise<number> {
  const rows = await api.server.services.db.query<{ n: number }>('SELECT count(*)::int AS n FROM auth_credential WHERE id LIKE $1', [`${prefix}%`]);
  return rows[0].n;
}

describe('Project/$init is all or nothing', () => {
  it('leaves no Project, User, profile, client or membership when the owner membership fails validation', async () => {
    const name = `Atomic ${randomUUID()}`;
    const email = `${randomUUID()}@example.org`;
    inject.failValidationOn = (r) => isMembership(r, (m) => m.project?.display === name && m.user?.reference?.startsWith('User/'));
    const token = await api.newProject().token();
    inject.written = [];
    const res = await init(token, [
      { name: 'name', valueString: name },
      { name: 'ownerEmail', valueString: email },
    ]);
    expect(res.status).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0].severity).toBe('error');
    // The User, the Project and the owner's Practitioner were written before the failure...
    expect(inject.written).toEqual(['User', 'Project', 'Practitioner']);
    // ...and none of them is left.
    expect(await count(`Project?name=${encodeURIComponent(name)}`)).toBe(0);
    expect(await count(`User?email=${encodeURIComponent(email)}`)).toBe(0);
    expect(await count(`Practitioner?family=Owner&given=${encodeURIComponent(email.split('@')[0])}`)).toBe(0);
    expect(await count(`ClientApplication?name=${encodeURIComponent(`${name} Default Client`)}`)).toBe(0);
  });

  it('leaves nothing, not even the client secret, when the last write (the client membership) conflicts', async () => {
    const name = `Atomic ${randomUUID()}`;
    const email = `${randomUUID()}@example.org`;
    let clientId: string | undefined;
    inject.failInsertOn = (r) => {
      if (r.resourceType === 'ClientApplication' && (r as Record<string, any>).name === `${name} Default Client`) clientId = r.id;
      return isMembership(r, (m) => m.user?.reference === `ClientApplication/${clientId}`);
    };
    const token = await api.newProject().token();
    inject.written = [];
    const res = await init(token, [
      { name: 'name', valueString: name },
      { name: 'ownerEmail', valueString: email },
    ]);
    expect(res.status).toBe(409);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0].code).toBe('conflict');
    expect(inject.written).toEqual(['User', 'Project', 'Practitioner', 'ProjectMembership', 'ClientApplication']);
    expect(await count(`Project?name=${encodeURIComponent(name)}`)).toBe(0);
    expect(await count(`User?email=${encodeURIComponent(email)}`)).toBe(0);
    expect(await count(`ClientApplication?name=${encodeURIComponent(`${name} Default Client`)}`)).toBe(0);
    expect(clientId).toBeDefined();
    expect(await getJson(api, `/fhir/R4/ClientApplication/${clientId}`, bearer(await api.superAdmin.token()))).toMatchObject({ status: 404 });
    expect(await credentialRows(`ClientApplication/${clientId}`)).toBe(0);
    // Nothing was half-made: the same request succeeds once the failure is gone.
    inject.failInsertOn = undefined;
    const again = await init(await api.newProject().token(), [
      { name: 'name', valueString: name },
      { name: 'ownerEmail', valueString: email },
    ]);
    expect(again.status).toBe(201);
    expect(await count(`Project?name=${encodeURIComponent(name)}`)).toBe(1);
    expect(await count(`User?email=${encodeURIComponent(email)}`)).toBe(1);
  });
});

describe('invite is all or nothing', () => {
  it('leaves no profile, User or password when the membership conflicts', async () => {
    const admin = api.newProject();
    const externalId = `auth0|${randomUUID()}`;
    const email = `${randomUUID()}@example.org`;
    const lastName = `L${randomUUID().slice(0, 8)}`;
    inject.failInsertOn = (r) => isMembership(r, (m) => m.externalId === externalId);
    const body = { resourceType: 'Practitioner', firstName: 'Ada', lastName, externalId, email, password: 'correct horse battery staple' };
    const token = await admin.token();
    inject.written = [];
    const res = await invite(admin.projectId, token, body);
    expect(res.status).toBe(409);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(res.body.issue[0].code).toBe('conflict');
    expect(inject.written).toEqual(['Practitioner', 'User']);
    expect(await count(`Practitioner?family=${lastName}`)).toBe(0);
    expect(await count(`User?email=${encodeURIComponent(email)}`)).toBe(0);
    expect(await count(`ProjectMembership?external-id=${encodeURIComponent(externalId)}`)).toBe(0);
    const login = await tokenRequest(api, { grant_type: 'password', username: email, password: 'correct horse battery staple' });
    expect(login.status).not.toBe(200);
    // The retry is a first invite, not a 409 against a half-made one.
    inject.failInsertOn = undefined;
    const again = await invite(admin.projectId, token, body);
    expect(again.status).toBe(201);
    expect(await count(`Practitioner?family=${lastName}`)).toBe(1);
    expect(await count(`User?email=${encodeURIComponent(email)}`)).toBe(1);
  });

  it('leaves nothing when the membership fails validation', async () => {
    const admin = api.newProject();
    const externalId = randomUUID();
    const email = `${randomUUID()}@example.org`;
    const lastName = `L${randomUUID().slice(0, 8)}`;
    inject.failValidationOn = (r) => isMembership(r, (m) => m.externalId === externalId);
    const token = await admin.token();
    inject.written = [];
    const res = await invite(admin.projectId, token, { resourceType: 'Patient', firstName: 'Pat', lastName, externalId, email });
    expect(res.status).toBe(400);
    expect(res.body.resourceType).toBe('OperationOutcome');
    expect(inject.written).toEqual(['Patient', 'User']);
    expect(await count(`Patient?family=${lastName}`)).toBe(0);
    expect(await count(`User?email=${encodeURIComponent(email)}`)).toBe(0);
    expect(await count(`ProjectMembership?external-id=${encodeURIComponent(externalId)}`)).toBe(0);
  });
});
