import { errors } from '../fhir/outcome.js';
import { ownOperationDefinition } from '../operations/definition.js';
import type { Operation, OperationRequest } from '../operations/registry.js';
import { expungeProject } from './project-expunge.js';

interface ExpungeInput {
  everything?: boolean;
  batchSize?: number;
}

interface ExpungeOutput {
  resources: number;
}

const DEFAULT_BATCH_SIZE = 500;
/** Largest `batchSize` a caller may ask for (one transaction removes that many resources). */
const MAX_BATCH_SIZE = 10_000;

/**
 * `POST /{type}/{id}/$expunge` (Medplum's shape): a resource removed for good, by a project admin
 * in their project or a super admin anywhere. On a Project the other operation applies (registered
 * first, so REST and GraphQL pick it there).
 */
export const expungeOperation: Operation<Record<string, never>, ExpungeOutput> = {
  definition: ownOperationDefinition('expunge.json'),
  readsQueryOnPost: true,
  acceptsPlainJsonBody: true,
  access: 'project-admin',
  authorize({ ctx, resourceType }) {
    // A User is an account of the whole server: other projects' memberships may name it.
    if (resourceType === 'User' && !ctx.identity.superAdmin) throw errors.forbidden('Only a super admin can expunge a User');
  },
  async handler(_input, { ctx, resourceType, id }) {
    await ctx.repo.expungeResource(resourceType!, id!);
    return { resources: 1 };
  },
};

/**
 * `POST /Project/{id}/$expunge?everything=true`, super admins only: the whole project's data
 * (project-expunge.ts), as an AsyncJob with `Prefer: respond-async`: progress after each batch, a
 * cancellation stops it before the next.
 */
export const projectExpungeOperation: Operation<ExpungeInput, ExpungeOutput> = {
  definition: ownOperationDefinition('Project-expunge.json'),
  respondsAsync: true,
  readsQueryOnPost: true,
  acceptsPlainJsonBody: true,
  access: 'super-admin',
  check: checkProjectExpunge,
  async handler(input, { ctx, id, job }) {
    const resources = await expungeProject(ctx.auth.storageServices, id!, {
      batchSize: input.batchSize ?? DEFAULT_BATCH_SIZE,
      signal: job?.signal,
      onProgress: job ? (removed) => job.progress({ resources: removed }) : undefined,
    });
    return { resources };
  },
};

async function checkProjectExpunge(input: ExpungeInput, { ctx, id, db }: OperationRequest): Promise<void> {
  if (input.everything !== true) {
    throw errors.invalid('Expunging a Project removes all its data: call it with everything=true', 'Parameters.parameter');
  }
  if (input.batchSize !== undefined && input.batchSize > MAX_BATCH_SIZE) {
    throw errors.invalid(`batchSize ${input.batchSize} is above the maximum of ${MAX_BATCH_SIZE}`, 'Parameters.parameter');
  }
  if (id === ctx.identity.projectId) throw errors.invalid('A super admin cannot expunge the project it acts in', 'Parameters.parameter');
  const found = await db.query('SELECT 1 FROM resource WHERE "resourceType" = \'Project\' AND id = $1', [id]);
  if (found.length === 0) throw errors.notFound(`Project/${id} not found`);
}
