import type { SqlExecutor } from '../../db/database.js';
import type { AsyncJob } from '../../fhir/resources.js';
import type { Repository } from '../../storage/repository.js';
import type { OperationInput } from '../parameters.js';
import type { Operation, OperationRequest } from '../registry.js';
import { enqueueJob } from './queue.js';
import { jobQueued } from './worker.js';

/**
 * Asynchronous operations (http://hl7.org/fhir/R4/async.html, as Medplum does it; docs/jobs.md):
 * an operation with `respondsAsync` called with `Prefer: respond-async` is answered 202 at once
 * with `Content-Location: <fhir base>/AsyncJob/<id>`, and runs as a durable job that any server
 * claims (src/operations/jobs/worker.ts). GraphQL's `<Field>Async` fields start the same job.
 * The AsyncJob is a resource of the caller's project, written by the server only, so it is read
 * (and polled) like any other:
 *
 *   accepted ──▶ active ──▶ completed   (output: the operation's Parameters)
 *                   │  └───▶ error       (output: `outcome`, an OperationOutcome)
 *                   └──────▶ cancelled   (AsyncJob/$cancel; output: what was done until it stopped)
 */

/** Whether a `Prefer` header asks for an asynchronous answer (`Prefer: respond-async`, RFC 7240). */
export function prefersAsync(prefer: string | undefined): boolean {
  return (prefer ?? '').split(/[,;]/).some((token) => token.trim().toLowerCase() === 'respond-async');
}

/**
 * The asynchronous form of an operation call, for every transport, once the caller is authorized
 * and the input decoded: checks the input (a client's mistake is the answer, not a failed job),
 * then writes the AsyncJob (`accepted`) and its queued job in one transaction. Returns the AsyncJob.
 * `requestUrl` is the request as the client sent it. Inside a transaction Bundle both rows join
 * its transaction: the job is queued if the Bundle commits, and neither row exists if it rolls
 * back (no server can claim a job before its commit).
 */
export async function acceptAsyncJob(operation: Operation, input: OperationInput, request: OperationRequest, requestUrl: string): Promise<AsyncJob> {
  await operation.check?.(input, request);
  const { ctx } = request;
  const projectId = ctx.identity.projectId;
  const { scopes: _parsed, ...identity } = ctx.identity;
  const write = async (repo: (projectId: string) => Repository, tx: SqlExecutor): Promise<AsyncJob> => {
    const created = await repo(projectId).createResource('AsyncJob', {
      resourceType: 'AsyncJob',
      status: 'accepted',
      requestTime: new Date().toISOString(),
      request: requestUrl,
    });
    const asyncJob = created.resource as AsyncJob;
    await enqueueJob(tx, ctx.config.jobs.queue, {
      id: asyncJob.id!,
      projectId,
      operation: operation.definition.code,
      level: request.level,
      resourceType: request.resourceType,
      resourceId: request.id,
      input,
      identity,
      requestUrl,
    });
    return asyncJob;
  };
  const job = ctx.transaction ? await write(ctx.auth.joinedRepositories(ctx.database), ctx.database) : await ctx.auth.inTransaction(write);
  ctx.database.afterCommit(() => jobQueued(ctx.auth.db));
  return job;
}
