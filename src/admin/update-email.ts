import { liveLoginsOf, membershipsReferencing, parseReference, readAny } from '../auth/accounts.js';
import { REFRESH_TOKEN_SECONDS } from '../auth/tokens.js';
import type { SqlExecutor } from '../db/database.js';
import { errors } from '../fhir/outcome.js';
import type { ContactPoint, User } from '../fhir/resources.js';
import { asResourceOf } from '../fhir/typed-resources.js';
import { compact, type Resource } from '../fhir/types.js';
import type { Identity } from '../identity/identity.js';
import { policyAllowsWrite } from '../identity/policy.js';
import type { RequestContext } from '../operations/context.js';
import type { Operation } from '../operations/registry.js';
import type { Repository } from '../storage/repository.js';

interface UpdateEmailInput {
  email: string;
  updateProfileTelecom?: boolean;
  skipEmailVerification?: boolean;
  signOutEverywhere?: boolean;
}

/** Profile types that carry `telecom` (Medplum updates the same ones). */
const PROFILE_TYPES = new Set(['Patient', 'Practitioner', 'RelatedPerson']);

/**
 * `User/{id}/$update-email` (Medplum's operation, plus `signOutEverywhere`): sets User.email
 * (unique across projects, case-insensitively: 409 on a clash, as any User write) and
 * `emailVerified: false`; with `updateProfileTelecom` adds the new email to the telecom of the
 * user's profiles (`use: work`) and marks the old one `use: old`; with `signOutEverywhere` revokes
 * every Login of the user, so its access and refresh tokens stop working at once on every server.
 * All of it is one transaction. Flint sends no email, so `skipEmailVerification` changes nothing.
 */
export const updateEmailOperation: Operation<UpdateEmailInput> = {
  definition: {
    resourceType: 'OperationDefinition',
    id: 'User-update-email',
    url: 'https://flint.dev/fhir/OperationDefinition/User-update-email',
    name: 'UserUpdateEmail',
    status: 'active',
    kind: 'operation',
    code: 'update-email',
    description: "Changes a User's email, optionally its profiles' email telecom, and can sign the user out everywhere",
    resource: ['User'],
    system: false,
    type: false,
    instance: true,
    affectsState: true,
    parameter: [
      { use: 'in', name: 'email', min: 1, max: '1', type: 'string', documentation: 'The new email of the User (unique within the User scope: server-wide, or its project)' },
      { use: 'in', name: 'updateProfileTelecom', min: 0, max: '1', type: 'boolean', documentation: "Also add the new email to the telecom of the user's profiles (the old one becomes use=old)" },
      { use: 'in', name: 'skipEmailVerification', min: 0, max: '1', type: 'boolean', documentation: 'Accepted for Medplum compatibility: Flint sends no verification email' },
      { use: 'in', name: 'signOutEverywhere', min: 0, max: '1', type: 'boolean', documentation: "Revoke every Login of the user: its tokens stop working at once" },
      { use: 'out', name: 'return', min: 1, max: '1', type: 'User', documentation: 'The updated User' },
    ],
  },
  async handler(input, { ctx, id }) {
    const email = input.email.trim();
    if (!/^[^@\s]+@[^@\s]+$/.test(email)) throw errors.invalid('"email" must be an email address', 'Parameters.parameter');
    const user = await userToChange(ctx, id!);
    const projectId = user.meta!.project!;
    const oldEmail = user.email;
    const updated = await ctx.auth.inTransaction(async (repo, tx) => {
      const result = await repo(projectId).updateResource('User', id!, compact({ ...user, email, emailVerified: false }), { ifMatch: user.meta?.versionId });
      if (input.updateProfileTelecom) await updateProfiles(repo, tx, ctx.identity, id!, email, oldEmail);
      if (input.signOutEverywhere) await revokeLogins(repo, tx, `User/${id}`);
      return result.resource;
    });
    return { return: updated };
  },
};

/**
 * The User the caller may change: its own; any for a super admin; one stored in their project for
 * its admins (a project admin reads and writes those Users already), unless it is a member of other
 * projects too. Others: 403, or 404 for a User the caller cannot see.
 */
async function userToChange(ctx: RequestContext, id: string): Promise<User> {
  const { identity } = ctx;
  if (identity.subject === `User/${id}`) {
    const own = await readAny(ctx.auth.db, 'User', id);
    if (!own) throw errors.notFound(`User/${id} not found`);
    return own;
  }
  if (!identity.superAdmin && !identity.projectAdmin) {
    throw errors.forbidden("Only super admins, project admins (for their project's users) and the user itself can change a user's email");
  }
  if (!policyAllowsWrite(identity, 'User')) throw errors.forbidden('Your access policy does not let you change User resources');
  const user = asResourceOf(await ctx.repo.readResource('User', id), 'User');
  if (!identity.superAdmin) await assertOnlyMemberHere(ctx, user);
  return user;
}

/**
 * A project admin changes the email of a server-wide User (one without `project`, as invites make
 * them) only while it is a member of no other project: the email signs in everywhere, so whoever
 * sets it could reset the password and enter the other projects as that user.
 */
async function assertOnlyMemberHere(ctx: RequestContext, user: User): Promise<void> {
  if (user.project?.reference !== undefined) return;
  const memberships = await membershipsReferencing(ctx.auth.db, 'user', `User/${user.id}`);
  if (memberships.some((membership) => membership.meta?.project !== ctx.identity.projectId)) {
    throw errors.forbidden("Only a super admin or the user itself can change the email of a user who is a member of other projects too", 'User.email');
  }
}

/**
 * The profiles of the user's memberships get the new email (`use: work`, unless they have it) and
 * their entries of the old one become `use: old`: every profile for the user itself and super
 * admins, those of the caller's project for a project admin.
 */
async function updateProfiles(
  repo: (projectId: string) => Repository,
  tx: SqlExecutor,
  caller: Identity,
  userId: string,
  email: string,
  oldEmail: string | undefined,
): Promise<void> {
  const everyProject = caller.superAdmin || caller.subject === `User/${userId}`;
  for (const membership of await membershipsReferencing(tx, 'user', `User/${userId}`)) {
    const projectId = membership.meta!.project!;
    const ref = parseReference(membership.profile?.reference);
    if (!ref || !PROFILE_TYPES.has(ref[0]) || (!everyProject && projectId !== caller.projectId)) continue;
    const profile = await readAny(tx, ref[0] as 'Patient', ref[1]);
    if (!profile || profile.meta?.project !== projectId) continue;
    const telecom = withEmail(profile.telecom ?? [], email, oldEmail);
    await repo(projectId).updateResource(ref[0], ref[1], compact({ ...(profile as Resource), telecom }));
  }
}

/** The telecom list with the new email added (`use: work`) and the old one's entries marked `use: old`. */
function withEmail(telecom: ContactPoint[], email: string, oldEmail: string | undefined): ContactPoint[] {
  const same = (a: string | undefined, b: string | undefined) => a !== undefined && b !== undefined && a.toLowerCase() === b.toLowerCase();
  const isEmail = (contact: ContactPoint) => contact.system === 'email';
  const marked = telecom.map((contact) =>
    isEmail(contact) && same(contact.value, oldEmail) && !same(contact.value, email) ? { ...contact, use: 'old' as const } : contact,
  );
  return marked.some((contact) => isEmail(contact) && same(contact.value, email)) ? marked : [...marked, { system: 'email', value: email, use: 'work' }];
}

/** Revokes the user's Logins that may still back a token (after the commit every server drops their cached identities). */
async function revokeLogins(repo: (projectId: string) => Repository, tx: SqlExecutor, subject: string): Promise<void> {
  for (const login of await liveLoginsOf(tx, subject, REFRESH_TOKEN_SECONDS)) {
    const revoked = compact({ ...login, revoked: true, refreshSecret: undefined, code: undefined });
    await repo(login.meta!.project!).updateResource('Login', login.id!, revoked);
  }
}
