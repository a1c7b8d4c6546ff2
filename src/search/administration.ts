import { isResourceType } from '../fhir/definitions.js';
import { errors } from '../fhir/outcome.js';
import { ownOperationDefinition } from '../operations/definition.js';
import type { Operation } from '../operations/registry.js';
import type { WriteHook } from '../storage/write-hooks.js';
import { checkDefinition } from '../indexing/parameters.js';
import { reindex, type ReindexPosition } from './reindex.js';

/**
 * Search administration: the `$reindex` operation, and the SearchParameter write hook that refuses
 * definitions a project cannot use (the composition root installs it).
 */
export const searchParameterWriteHook: readonly [string, WriteHook] = [
  'SearchParameter',
  async (tx, change) => {
    if (change.resource) await checkDefinition(tx, change.resource, change.projectId);
  },
];

interface ReindexInput {
  type: string[];
  project?: string;
  batchSize?: number;
}

interface ReindexOutput {
  resources: number;
  byType: { type: string; resources: number }[];
}

/** Largest `batchSize` a caller may ask for (one transaction locks that many resources). */
const MAX_BATCH_SIZE = 10_000;

/**
 * `POST /$reindex` (super admins): rebuilds index rows, for some types and one project if given.
 * With `Prefer: respond-async` it runs as an AsyncJob (src/operations/jobs): progress and a
 * checkpoint after each batch (a resumed job starts after the last batch committed), and a
 * cancellation stops it before the next batch.
 */
export const reindexOperation: Operation<ReindexInput, ReindexOutput> = {
  definition: ownOperationDefinition('reindex.json'),
  respondsAsync: true,
  access: 'super-admin',
  async check(input, { db }) {
    for (const type of input.type) {
      if (!isResourceType(type)) throw errors.invalid(`Unknown resource type "${type}" to reindex`, 'Parameters.parameter');
    }
    if (input.batchSize !== undefined && input.batchSize > MAX_BATCH_SIZE) {
      throw errors.invalid(`batchSize ${input.batchSize} is above the maximum of ${MAX_BATCH_SIZE}`, 'Parameters.parameter');
    }
    if (input.project !== undefined) {
      const found = await db.query('SELECT 1 FROM resource WHERE "resourceType" = \'Project\' AND id = $1 AND NOT deleted', [input.project]);
      if (found.length === 0) throw errors.invalid(`Project ${input.project} not found`, 'Parameters.parameter');
    }
  },
  async handler(input, { db, job, ctx }) {
    const byType = new Map<string, number>();
    const output = (resources: number): ReindexOutput => ({ resources, byType: [...byType].map(([type, count]) => ({ type, resources: count })) });
    const result = await reindex(db, {
      projectId: input.project,
      resourceTypes: input.type.length > 0 ? input.type : undefined,
      batchSize: input.batchSize,
      searchCache: ctx.searchCache,
      signal: job?.signal,
      resumeFrom: job?.resumeFrom as ReindexPosition | undefined,
      onProgress: job
        ? async (progress) => {
            for (const entry of progress.position.byType) byType.set(entry.resourceType, entry.resources);
            await job.checkpoint(progress.position);
            await job.progress(output(progress.total));
          }
        : undefined,
    });
    return {
      resources: result.resources,
      byType: result.byType.map((entry) => ({ type: entry.resourceType, resources: entry.resources })),
    };
  },
};
