import { errors } from '../fhir/outcome.js';
import { ownOperationDefinition } from '../operations/definition.js';
import type { Operation } from '../operations/registry.js';
import { registerWriteHook } from '../storage/repository.js';
import { checkDefinition } from './parameters.js';
import { reindex } from './reindex.js';

/**
 * Search administration: the `$reindex` operation, and the SearchParameter write hook that refuses
 * definitions a project cannot use (importing this module installs it; src/operations/builtin.ts
 * does).
 */

registerWriteHook('SearchParameter', async (tx, change) => {
  if (change.resource) await checkDefinition(tx, change.resource, change.projectId);
});

interface ReindexInput {
  type: string[];
  project?: string;
}

interface ReindexOutput {
  resources: number;
  byType: { type: string; resources: number }[];
}

/** `POST /$reindex` (super admins): rebuilds index rows, for some types and one project if given. */
export const reindexOperation: Operation<ReindexInput, ReindexOutput> = {
  definition: ownOperationDefinition('reindex.json'),
  authorize({ ctx }) {
    if (!ctx.identity.superAdmin) throw errors.forbidden('Only a super admin can run $reindex');
  },
  async handler(input, { db }) {
    const types = input.type.length > 0 ? input.type : undefined;
    if (input.project !== undefined) {
      const found = await db.query('SELECT 1 FROM resource WHERE "resourceType" = \'Project\' AND id = $1 AND NOT deleted', [input.project]);
      if (found.length === 0) throw errors.invalid(`Project ${input.project} not found`, 'Parameters.parameter');
    }
    const result = await reindex(db, { projectId: input.project, resourceTypes: types });
    return {
      resources: result.resources,
      byType: result.byType.map((entry) => ({ type: entry.resourceType, resources: entry.resources })),
    };
  },
};
