import { membershipsReferencing, parseReference, readAny } from '../auth/accounts.js';
import { prepareClientSecret, withAccountWrites } from '../auth/account-writes.js';
import type { SqlExecutor } from '../db/database.js';
import { errors } from '../fhir/outcome.js';
import type { Reference, User } from '../fhir/resources.js';
import type { Identity } from '../identity/identity.js';
import type { OperationDefinition } from '../operations/definition.js';
import type { Operation } from '../operations/registry.js';
import { randomUUID } from 'node:crypto';

export const projectInitDefinition: OperationDefinition = {
  resourceType: 'OperationDefinition',
  id: 'Project-init',
  url: 'https://flint.dev/fhir/OperationDefinition/Project-init',
  name: 'ProjectInit',
  status: 'active',
  kind: 'operation',
  code: 'init',
  description: 'Creates a Project, its owner admin membership and its default ClientApplication',
  resource: ['Project'],
  system: false,
  type: true,
  instance: false,
  affectsState: true,
  parameter: [
    { use: 'in', name: 'name', min: 1, max: '1', type: 'string', documentation: 'Name of the new Project' },
    { use: 'in', name: 'owner', min: 0, max: '1', type: 'Reference', documentation: "An existing User/<id> who owns the Project: a member of the caller's project (any user for a super admin)" },
    { use: 'in', name: 'ownerEmail', min: 0, max: '1', type: 'string', documentation: "Email of the owner; the User is created when none has it (an existing one must be a member of the caller's project, unless the caller is a super admin)" },
    { use: 'out', name: 'return', min: 1, max: '1', type: 'Project', documentation: 'The new Project' },
  ],
};

interface InitInput {
  name: string;
  owner?: Reference;
  ownerEmail?: string;
}

/**
 * `Project/$init` (SPEC 4.6): a new Project (`strictMode: true`) owned by `owner`, `ownerEmail`
 * or the token's user, with the owner's admin membership (Practitioner profile) and the default
 * ClientApplication (DESIGN 5). 201 with the Project. An existing user named as owner must be a
 * member of the caller's project, unless the caller is a super admin (mayName).
 */
export const projectInitOperation: Operation<InitInput> = {
  definition: projectInitDefinition,
  successStatus: 201,
  async handler(input, { ctx }) {
    const name = input.name.trim();
    if (name === '') throw errors.invalid('The required input parameter "name" is expected to be a non-empty string', 'Parameters.parameter');
    const auth = ctx.auth;
    const projectId = randomUUID();
    let owner: Owner | undefined;
    let ownerEmail: string | undefined;
    if (input.owner) {
      const ref = parseReference(input.owner.reference);
      const user = ref?.[0] === 'User' ? await readAny(auth.db, 'User', ref[1]) : undefined;
      // One answer for a user the caller may not name and for no user at all: it tells nothing of other projects.
      if (!user || !(await mayName(auth.db, ctx.identity, user))) throw errors.invalid(OWNER_REFUSED, 'Parameters.parameter');
      owner = ownerOf(user);
    } else if (input.ownerEmail) {
      ownerEmail = input.ownerEmail.trim();
      if (!/^[^@\s]+@[^@\s]+$/.test(ownerEmail)) throw errors.invalid('"ownerEmail" must be an email address', 'Parameters.parameter');
    } else {
      const subject = parseReference(ctx.identity.subject);
      const user = subject?.[0] === 'User' ? await readAny(auth.db, 'User', subject[1]) : undefined;
      if (!user) {
        throw errors.invalid(
          'This token has no user to own the project: an owner is needed, give "owner" (User reference) or "ownerEmail"',
          'Parameters.parameter',
        );
      }
      owner = ownerOf(user);
    }
    const secret = await prepareClientSecret(auth);
    // One transaction: the owner User (for ownerEmail), the Project, the owner's profile and
    // membership, the default client, its membership and its secret all commit, or none does.
    const created = await withAccountWrites(auth, async (writes) => {
      if (ownerEmail) {
        const { user, created } = await writes.userByEmail(ownerEmail, projectId, { firstName: ownerEmail.split('@')[0], lastName: 'Owner' });
        if (!created && !(await mayName(writes.tx, ctx.identity, user))) throw errors.invalid(OWNER_EMAIL_REFUSED, 'Parameters.parameter');
        owner = ownerOf(user);
      }
      return writes.createProject({ id: projectId, name, owner }, secret);
    });
    return { return: created.project };
  },
};

const OWNER_REFUSED = '"owner" must reference an existing User/<id> of your project';
const OWNER_EMAIL_REFUSED = '"ownerEmail" must be the email of a user of your project, or of no user yet (a new user is made)';

/**
 * Whether the caller may make an existing user the owner (and so an admin member) of a new
 * project: a super admin any user; anyone else only a user who is already a member of the
 * caller's own project, so that no project can attach another project's users to itself.
 */
async function mayName(db: SqlExecutor, caller: Identity, user: User): Promise<boolean> {
  if (caller.superAdmin) return true;
  const memberships = await membershipsReferencing(db, 'user', `User/${user.id}`);
  return memberships.some((membership) => membership.meta?.project === caller.projectId);
}

interface Owner {
  userId: string;
  firstName?: string;
  lastName?: string;
}

function ownerOf(user: User): Owner {
  return { userId: user.id!, firstName: user.firstName, lastName: user.lastName };
}
