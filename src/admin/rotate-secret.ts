import { retireClientSecret, rotateClientSecret } from '../auth/client-secrets.js';
import { errors } from '../fhir/outcome.js';
import type { Identity } from '../identity/identity.js';
import { policyAllowsWrite } from '../identity/policy.js';
import type { Operation } from '../operations/registry.js';

interface RotateInput {
  secret?: string;
  retiringSecret?: string;
}

/** Besides being an admin (the operation's access): a policy that lets them write clients. */
function assertMayManageClients(identity: Identity): void {
  if (!policyAllowsWrite(identity, 'ClientApplication')) throw errors.forbidden('Your access policy does not let you change ClientApplication resources');
}

/**
 * `ClientApplication/{id}/$rotate-secret` (Medplum's operation): a new secret becomes current and
 * the previous one keeps working for CLIENT_SECRET_GRACE_MS (shown to admins as `retiringSecret`),
 * so running apps can switch; tokens already issued stay valid until they expire. Medplum's inputs
 * are honoured: `secret`, when given, must be the current secret; `retiringSecret` instead ends
 * the grace of the previous one now. Without either the secret is rotated. The answer is the
 * ClientApplication as its admins read it.
 */
export const rotateSecretOperation: Operation<RotateInput> = {
  definition: {
    resourceType: 'OperationDefinition',
    id: 'ClientApplication-rotate-secret',
    url: 'https://flint.dev/fhir/OperationDefinition/ClientApplication-rotate-secret',
    name: 'ClientApplicationRotateSecret',
    status: 'active',
    kind: 'operation',
    code: 'rotate-secret',
    description: 'Gives a ClientApplication a new secret; the previous one keeps working for a grace period (project admins)',
    resource: ['ClientApplication'],
    system: false,
    type: false,
    instance: true,
    affectsState: true,
    parameter: [
      { use: 'in', name: 'secret', min: 0, max: '1', type: 'string', documentation: 'The current secret, checked when given; it becomes the retiring one' },
      { use: 'in', name: 'retiringSecret', min: 0, max: '1', type: 'string', documentation: 'The retiring secret: ends its grace now instead of rotating' },
      { use: 'out', name: 'return', min: 1, max: '1', type: 'ClientApplication', documentation: 'The ClientApplication with its new secret (and retiringSecret)' },
    ],
  },
  access: 'project-admin',
  authorize({ ctx }) {
    assertMayManageClients(ctx.identity);
  },
  async handler(input, { ctx, id }) {
    if (input.secret !== undefined && input.retiringSecret !== undefined) {
      throw errors.invalid('Give "secret" (to rotate) or "retiringSecret" (to retire it now), not both', 'Parameters.parameter');
    }
    // Through the request's repository: 404 for a client of another project, and its AccessPolicy.
    await ctx.repo.readVersion('ClientApplication', id!);
    if (input.retiringSecret !== undefined) await retireClientSecret(ctx.auth, id!, input.retiringSecret);
    else await rotateClientSecret(ctx.auth, id!, input.secret);
    return { return: await ctx.repo.readResource('ClientApplication', id!) };
  },
};
