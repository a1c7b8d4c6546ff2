import { errors } from '../../fhir/outcome.js';
import type { Operation } from '../../operations/registry.js';
import type { Subscription } from '../subscription.js';
import { signBindingToken, webSocketUrl } from './binding-token.js';

interface BindingTokenOutput {
  token: string;
  expiration: string;
  subscription: string;
  'websocket-url': string;
}

/**
 * `Subscription/{id}/$get-ws-binding-token` (R4B backport, as Medplum answers it): a short-lived
 * token that binds a socket of `/ws/subscriptions-r4` to this Subscription. Whoever may read the
 * Subscription (project and AccessPolicy, through the request's repository) gets one.
 */
export const getWsBindingTokenOperation: Operation<Record<string, never>, BindingTokenOutput> = {
  definition: {
    resourceType: 'OperationDefinition',
    id: 'Subscription-get-ws-binding-token',
    url: 'http://hl7.org/fhir/uv/subscriptions-backport/OperationDefinition/backport-subscription-get-ws-binding-token',
    name: 'GetWsBindingToken',
    status: 'active',
    kind: 'operation',
    code: 'get-ws-binding-token',
    description: 'A short-lived token that binds a WebSocket of /ws/subscriptions-r4 to this websocket Subscription',
    resource: ['Subscription'],
    system: false,
    type: false,
    instance: true,
    affectsState: false,
    parameter: [
      { use: 'out', name: 'token', min: 1, max: '1', type: 'string', documentation: 'The token to send in a bind-with-token message' },
      { use: 'out', name: 'expiration', min: 1, max: '1', type: 'dateTime', documentation: 'When the token stops binding' },
      { use: 'out', name: 'subscription', min: 1, max: '1', type: 'string', documentation: 'The Subscription the token binds to (Subscription/<id>)' },
      { use: 'out', name: 'websocket-url', min: 1, max: '1', type: 'url', documentation: 'Where to open the WebSocket' },
    ],
  },
  async handler(_input, { ctx, id }) {
    const subscription = (await ctx.repo.readResource('Subscription', id!)) as Subscription;
    if (subscription.channel?.type !== 'websocket') {
      throw errors.invalid(`Subscription/${id} has channel type "${subscription.channel?.type ?? ''}": binding tokens are for websocket Subscriptions`, 'Subscription.channel.type');
    }
    if (subscription.status !== 'active') throw errors.invalid(`Subscription/${id} is not active (status "${subscription.status ?? ''}")`, 'Subscription.status');
    const projectId = subscription.meta?.project ?? ctx.identity.projectId;
    const { token, expiresAt } = await signBindingToken(
      ctx.auth.keys,
      ctx.config.baseUrl,
      { subscriptionId: subscription.id!, projectId, membershipId: ctx.identity.membershipId },
      ctx.config.wsBindingTokenSeconds,
    );
    return {
      token,
      expiration: new Date(expiresAt * 1000).toISOString(),
      subscription: `Subscription/${subscription.id!}`,
      'websocket-url': webSocketUrl(ctx.config.baseUrl),
    };
  },
};
