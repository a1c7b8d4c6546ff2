import { createHmac } from 'node:crypto';
import type { Change } from '../storage/change-log.js';
import { refusedEndpoint } from '../net/outbound-addresses.js';
import { secretOf, type Subscription } from './subscription.js';

/** What one attempt to deliver gives: the receiver's status, or why there was none. */
export interface AttemptResult {
  ok: boolean;
  status?: number;
  error?: string;
}

/** The header receivers de-duplicate on: the same for every attempt of one delivery. */
export const EVENT_ID_HEADER = 'X-Event-Id';

export interface RestHookDelivery {
  readonly eventId: string;
  readonly subscription: Subscription;
  readonly interaction: Change['interaction'];
  readonly reference: string;
  /** The version delivered, as stored (absent for a delete). */
  readonly text: string | undefined;
}

/**
 * The body and headers Medplum's rest-hooks send, so its receivers work unchanged: the resource
 * (`{}` for a delete) when `channel.payload` is given (application/fhir+json), none without it;
 * X-Medplum-Subscription, X-Medplum-Interaction, X-Medplum-Deleted-Resource, the channel's own
 * headers, and X-Signature (HMAC-SHA256 of the body, hex) when the Subscription has a secret.
 */
export function restHookRequest(delivery: RestHookDelivery): { body: string | undefined; headers: Record<string, string> } {
  const { subscription, interaction } = delivery;
  // R4: without a payload type the notification has no body.
  const body = subscription.channel?.payload ? resourceBody(delivery) : undefined;
  const headers: Record<string, string> = {
    'X-Medplum-Subscription': subscription.id!,
    'X-Medplum-Interaction': interaction,
    [EVENT_ID_HEADER]: delivery.eventId,
  };
  if (body !== undefined) headers['Content-Type'] = 'application/fhir+json';
  if (interaction === 'delete') headers['X-Medplum-Deleted-Resource'] = delivery.reference;
  for (const header of subscription.channel?.header ?? []) {
    const colon = header.indexOf(':');
    if (colon > 0) headers[header.slice(0, colon).trim()] = header.slice(colon + 1).trim();
  }
  const secret = secretOf(subscription);
  if (secret) headers['X-Signature'] = createHmac('sha256', secret).update(body ?? '').digest('hex');
  return { body, headers };
}

function resourceBody(delivery: RestHookDelivery): string {
  return delivery.interaction === 'delete' || delivery.text === undefined ? '{}' : delivery.text;
}

/** POSTs the notification; a 2xx answer within `timeoutMs` is a success. */
export async function sendRestHook(delivery: RestHookDelivery, options: { timeoutMs: number; allowPrivate: boolean; signal: AbortSignal }): Promise<AttemptResult> {
  const endpoint = new URL(delivery.subscription.channel!.endpoint!);
  const refusal = await refusedEndpoint(endpoint, options.allowPrivate);
  if (refusal) return { ok: false, error: `endpoint refused: ${refusal}` };
  const { body, headers } = restHookRequest(delivery);
  try {
    const response = await fetch(endpoint, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.any([AbortSignal.timeout(options.timeoutMs), options.signal]) });
    // The answer is not read, but must be consumed to free the connection.
    await response.body?.cancel().catch(() => undefined);
    return { ok: response.status >= 200 && response.status < 300, status: response.status };
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
    return { ok: false, error: timedOut ? `no answer within ${options.timeoutMs} ms` : `request failed: ${error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error)}` };
  }
}
