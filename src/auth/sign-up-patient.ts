import { errors } from '../fhir/outcome.js';
import { isFhirId } from '../fhir/ids.js';
import type { ProjectMembership } from '../fhir/resources.js';
import { membershipsReferencing, parseReference, readAny } from './accounts.js';
import type { AccountWrites } from './account-writes.js';
import type { AuthService } from './service.js';
import { randomUUID } from 'node:crypto';
import type { SqlExecutor } from '../db/database.js';

/**
 * Patients signing up to an existing project, as Medplum allows it: only to a project whose
 * `defaultPatientAccessPolicy` names an AccessPolicy of its own (the project admins' opt-in, and
 * what the patient may do); the patient gets a Patient profile and a membership with that policy.
 */

/** Refuses (400, naming the field) a sign-up to a project that does not take patients, or with a client of another project. */
export async function checkPatientSignUp(auth: AuthService, projectId: string, clientId: string | undefined): Promise<void> {
  await patientPolicyOf(auth.db, projectId);
  if (clientId !== undefined) {
    const client = isFhirId(clientId) ? await readAny(auth.db, 'ClientApplication', clientId) : undefined;
    if (client?.meta?.project !== projectId) throw errors.invalid('"clientId" is not a client application of the project signed up to', 'clientId');
  }
}

/** The AccessPolicy id patients of the project get; 400 when it takes no patients. */
async function patientPolicyOf(db: SqlExecutor, projectId: string): Promise<string> {
  const project = isFhirId(projectId) ? await readAny(db, 'Project', projectId) : undefined;
  if (!project) throw errors.invalid(`"projectId": there is no project ${projectId}`, 'projectId');
  const policyId = parseReference(project.defaultPatientAccessPolicy?.reference);
  // The Super Admin project never takes sign-ups, whatever it holds.
  if (project.superAdmin || policyId?.[0] !== 'AccessPolicy') {
    throw errors.invalid('This project does not take patient sign-ups (it has no defaultPatientAccessPolicy)', 'projectId');
  }
  const policy = await readAny(db, 'AccessPolicy', policyId[1]);
  if (policy?.meta?.project !== projectId) {
    throw errors.invalid("The project's defaultPatientAccessPolicy names no AccessPolicy of the project", 'projectId');
  }
  return policyId[1];
}

/**
 * In the sign-up's transaction: the Patient (name and email of the User) and its membership with
 * the project's patient policy. Under a lock on the user, so two requests make one membership; a
 * user who has one already is 409.
 */
export async function createPatientMembership(
  writes: AccountWrites,
  projectId: string,
  user: { id: string; firstName: string; lastName: string },
): Promise<ProjectMembership> {
  await writes.lock(`sign-up-membership:${user.id}`);
  if ((await membershipsReferencing(writes.tx, 'user', `User/${user.id}`)).length > 0) {
    throw errors.conflict('This user already has a membership: sign in instead');
  }
  const policyId = await patientPolicyOf(writes.tx, projectId);
  const stored = await readAny(writes.tx, 'User', user.id);
  const name = `${user.firstName} ${user.lastName}`;
  const patient = await writes.create(projectId, {
    resourceType: 'Patient',
    id: randomUUID(),
    name: [{ given: [user.firstName], family: user.lastName }],
    ...(stored?.email ? { telecom: [{ system: 'email', use: 'home', value: stored.email }] } : {}),
  });
  return writes.create(projectId, {
    resourceType: 'ProjectMembership',
    id: randomUUID(),
    project: { reference: `Project/${projectId}` },
    user: { reference: `User/${user.id}`, display: name },
    profile: { reference: `Patient/${patient.id}`, display: name },
    userName: name,
    accessPolicy: { reference: `AccessPolicy/${policyId}` },
    admin: false,
  });
}
