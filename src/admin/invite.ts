import { randomUUID } from 'node:crypto';
import { parseReference, readAny } from '../auth/accounts.js';
import { withAccountWrites } from '../auth/account-writes.js';
import { hashSecret } from '../auth/secrets.js';
import { assertExternalIdFree } from '../auth/uniqueness.js';
import { errors } from '../fhir/outcome.js';
import type { Reference } from '../fhir/resources.js';
import type { Resource } from '../fhir/types.js';
import type { AuthService } from '../auth/service.js';
import type { Identity } from '../identity/identity.js';

const PROFILE_TYPES = ['Practitioner', 'Patient', 'RelatedPerson'] as const;
type ProfileType = (typeof PROFILE_TYPES)[number];

function isProfileType(type: string): type is ProfileType {
  return (PROFILE_TYPES as readonly string[]).includes(type);
}

/**
 * `POST /admin/projects/{projectId}/invite` (SPEC 4.3), for that project's admins and super
 * admins: creates the profile resource, the User when an email is given (reused when one exists:
 * for a Patient the User scoped to this project, for anyone else the server-wide User)
 * and the ProjectMembership carrying `externalId`; 201 with the membership. An `externalId` already
 * used by any membership gives 409, also when two invites race (a lock in the transaction orders
 * them). Everything is written in one transaction: a failure part-way leaves nothing behind.
 */
export async function inviteUser(auth: AuthService, identity: Identity, projectId: string, body: Record<string, unknown>): Promise<Resource> {
  if (!identity.superAdmin && !(identity.projectAdmin && identity.projectId === projectId)) {
    throw errors.forbidden('Only admins of this project (or super admins) can invite users');
  }
  const project = await readAny(auth.db, 'Project', projectId);
  if (!project) throw errors.notFound(`Project/${projectId} not found`);
  const str = (name: string, required: boolean): string | undefined => {
    const value = body[name];
    if (value === undefined && !required) return undefined;
    if (typeof value !== 'string' || value.trim() === '') throw errors.invalid(`"${name}" must be a non-empty string`, name);
    // externalId is locked on before anything is validated: a NUL (which PostgreSQL text cannot
    // hold) failed that statement with a 500.
    if (value.includes('\0')) throw errors.invalid(`"${name}" holds a NUL character (U+0000)`, name);
    return value;
  };
  const resourceType = str('resourceType', true)!;
  if (!isProfileType(resourceType)) throw errors.invalid('"resourceType" must be Practitioner, Patient or RelatedPerson', 'resourceType');
  const firstName = str('firstName', true)!;
  const lastName = str('lastName', true)!;
  const externalId = str('externalId', true)!;
  const email = str('email', false);
  const password = str('password', false);
  if (body.admin !== undefined && typeof body.admin !== 'boolean') throw errors.invalid('"admin" must be a boolean', 'admin');
  const accessPolicy = await policyReference(auth, body.accessPolicy, projectId);
  // scrypt is slow: hash before the transaction opens (used only when the User is new).
  const passwordHash = email && password ? await hashSecret(password) : undefined;
  const name = `${firstName} ${lastName}`;
  // One transaction for the profile, the User, its password and the membership: all or nothing.
  const membership = await withAccountWrites(auth, async (writes) => {
    // externalId is unique across all memberships (SPEC 5 rule 7): checked before anything is
    // written, under a lock on the value, so concurrent invites of one externalId queue here and
    // all but the first get 409 (the membership's write hook checks again, under the same lock).
    await assertExternalIdFree(writes.tx, externalId);
    const profile = await writes.create(projectId, {
      resourceType,
      id: randomUUID(),
      name: [{ given: [firstName], family: lastName }],
      ...(email ? { telecom: [{ system: 'email', value: email }] } : {}),
    });
    let userRef: string | undefined;
    if (email) {
      // As Medplum invites: a patient's User is scoped to the project, anyone else's is the
      // server-wide User of the email. Under a lock on the email: concurrent invites make one User.
      const { user, created } = await writes.userByEmail(email, projectId, {
        firstName,
        lastName,
        ...(resourceType === 'Patient' ? { project: { reference: `Project/${projectId}` } } : {}),
      });
      if (created && passwordHash) await writes.storePasswordHash(user.id, projectId, passwordHash);
      userRef = `User/${user.id}`;
    }
    return writes.create(projectId, {
      resourceType: 'ProjectMembership',
      id: randomUUID(),
      project: { reference: `Project/${projectId}`, display: project.name },
      user: { reference: userRef ?? `${resourceType}/${profile.id}`, display: name },
      profile: { reference: `${resourceType}/${profile.id}`, display: name },
      userName: name,
      externalId,
      admin: body.admin === true,
      accessPolicy,
    });
  });
  return membership;
}

async function policyReference(auth: AuthService, value: unknown, projectId: string): Promise<Reference | undefined> {
  if (value === undefined) return undefined;
  const reference = typeof value === 'string' ? value : (value as { reference?: unknown } | null)?.reference;
  const ref = typeof reference === 'string' ? parseReference(reference) : undefined;
  if (!ref || ref[0] !== 'AccessPolicy') throw errors.invalid('"accessPolicy" must reference AccessPolicy/<id>', 'accessPolicy');
  const policy = await readAny(auth.db, 'AccessPolicy', ref[1]);
  if (!policy || policy.meta?.project !== projectId) throw errors.invalid(`AccessPolicy/${ref[1]} is not in this project`, 'accessPolicy');
  return { reference: `AccessPolicy/${ref[1]}` };
}
