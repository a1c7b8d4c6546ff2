import { allOk, errors } from '../fhir/outcome.js';
import type { Operation } from '../operations/registry.js';
import { insertChange, insertDeliveries } from './outbox.js';
import type { Subscription } from './subscription.js';

interface ResendInput {
  subscription?: string;
  verbose?: boolean;
}

/**
 * `POST /{type}/{id}/$resend` (Medplum's): queues deliveries of the resource's current version
 * again, as an `update`. Without `subscription`, every active Subscription of the project whose
 * criteria match gets one (the version is matched as a write's is); with `subscription`
 * (`Subscription/<id>` or the id), only that one, without its criteria checked: the caller
 * names it. Medplum's plain JSON body or a Parameters body. Project admins only.
 */
export const resendOperation: Operation<ResendInput> = {
  definition: {
    resourceType: 'OperationDefinition',
    id: 'resend',
    url: 'https://flint.dev/fhir/OperationDefinition/resend',
    name: 'Resend',
    status: 'active',
    kind: 'operation',
    code: 'resend',
    description: 'Queues the subscription notifications of the current version of a resource again (project admins)',
    resource: ['Resource'],
    system: false,
    type: false,
    instance: true,
    affectsState: true,
    parameter: [
      { use: 'in', name: 'subscription', min: 0, max: '1', type: 'string', documentation: 'Only this Subscription (Subscription/<id>)' },
      { use: 'in', name: 'verbose', min: 0, max: '1', type: 'boolean', documentation: 'Accepted for Medplum clients; no effect' },
      { use: 'out', name: 'return', min: 1, max: '1', type: 'OperationOutcome', documentation: 'All OK once the deliveries are queued' },
    ],
  },
  acceptsPlainJsonBody: true,
  access: 'project-admin',
  async handler(input, { ctx, resourceType, id }) {
    // Through the request's repository: 404 in another project, 410 once deleted.
    const version = await ctx.repo.readVersion(resourceType!, id!);
    const queued = { projectId: version.projectId, resourceType: version.resourceType, resourceId: version.id, versionId: version.versionId, interaction: 'update' as const };
    if (input.subscription !== undefined) {
      const subscriptionId = input.subscription.replace(/^Subscription\//, '');
      const subscription = (await ctx.repo.readResource('Subscription', subscriptionId).catch(() => undefined)) as Subscription | undefined;
      if (!subscription || subscription.status !== 'active') {
        throw errors.invalid(`Subscription/${subscriptionId} is not an active Subscription of this project`, 'Parameters.parameter.where(name=\'subscription\')');
      }
      await insertDeliveries(ctx.database, queued, [subscriptionId]);
    } else {
      await insertChange(ctx.database, { ...queued, id: version.id });
    }
    ctx.changeLog?.committed();
    return { return: allOk('Subscription notifications queued') };
  },
};
