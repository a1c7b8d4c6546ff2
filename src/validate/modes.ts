import { OperationOutcomeError } from '../fhir/outcome.js';
import type { OperationOutcomeIssue, Resource } from '../fhir/types.js';
import type { RequestContext } from '../operations/context.js';
import { information } from './report.js';

export type ValidationMode = 'create' | 'update' | 'delete';

/** Thrown at the end of a dry run so that its transaction rolls back. */
class DryRunDone extends Error {}

/** What `$validate`'s mode checks the write against: the type, and the instance and content when given. */
export interface ModeTarget {
  readonly resourceType: string;
  /** The instance of an instance-level call. */
  readonly id?: string;
  readonly resource?: Resource;
}

/**
 * Whether the write that `mode` names would be accepted: the write itself, run in a transaction
 * that is always rolled back, so access rules (AccessPolicy, scopes, admin-only types), existence,
 * id and version checks and uniqueness are exactly the write's. What refuses it (403, 404, 400...)
 * becomes issues of the answer. Nothing is kept: the transaction's caches and notices only follow
 * a commit.
 */
export async function modeIssues(ctx: RequestContext, mode: ValidationMode, target: ModeTarget): Promise<OperationOutcomeIssue[]> {
  if (ctx.transaction) {
    return [information(`mode=${mode} is not checked inside a transaction Bundle (its dry run would join the Bundle's transaction)`)];
  }
  if (target.resourceType === 'ClientApplication') {
    return [information(`mode=${mode} is not checked for ClientApplication: its secrets are written outside the write's transaction`)];
  }
  try {
    await ctx.inTransaction(async (tx) => {
      await dryRun(tx, mode, target);
      throw new DryRunDone();
    });
  } catch (error) {
    if (error instanceof DryRunDone) return [];
    if (error instanceof OperationOutcomeError && error.status < 500) return error.outcome.issue;
    throw error;
  }
  return [];
}

async function dryRun(tx: RequestContext, mode: ValidationMode, { resourceType, id, resource }: ModeTarget): Promise<void> {
  if (mode === 'create') await tx.repo.createResource(resourceType, resource);
  else if (mode === 'update') await tx.repo.updateResource(resourceType, id!, resource);
  else await tx.repo.deleteResource(resourceType, id!);
}
