import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { LoginWriter } from '../../src/auth/login-writer.js';
import type { Resource } from '../../src/fhir/types.js';
import { useTestServer } from '../helpers/server.js';

/**
 * The Login writer groups the Logins of concurrent token requests into one statement: one Login
 * the database refuses must fail only its own request, never the others of its statement.
 */

const api = await useTestServer();

function login(projectId: string, id: string = randomUUID()): Resource {
  return {
    resourceType: 'Login',
    id,
    meta: { versionId: randomUUID(), lastUpdated: new Date().toISOString(), project: projectId },
    authMethod: 'client',
    authTime: new Date().toISOString(),
    scope: 'openid',
  } as Resource;
}

describe('LoginWriter', () => {
  it('fails only the Login the database refuses, and writes the others of its statement', async () => {
    const writer = new LoginWriter(api.server.services.db);
    const projectId = randomUUID();
    const first = login(projectId);
    await writer.write(first);
    // Written in one turn, so in one statement; the second repeats an id already stored.
    const results = await Promise.allSettled([writer.write(login(projectId)), writer.write(login(projectId, first.id)), writer.write(login(projectId))]);
    expect(results.map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
  });
});
