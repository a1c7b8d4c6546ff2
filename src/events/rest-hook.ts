import { createHmac } from 'node:crypto';
import type { Change } from '../storage/change-log.js';
import { outboundRequest, RefusedAddressError } from '../net/outbound-request.js';
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
  const { body, headers } = restHookRequest(delivery);
  try {
    const response = await outboundRequest(new URL(delivery.subscription.channel!.endpoint!), {
      method: 'POST', headers, body, readBody: false, allowPrivate: options.allowPrivate, signal: options.signal, timeoutMs: options.timeoutMs,
    });
    return { ok: response.status >= 200 && response.status < 300, status: response.status };
  } catch (error) {
    if (error instanceof RefusedAddressError) return { ok: false, error: `endpoint refused: ${error.message}` };
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
    return { ok: false, error: timedOut ? `no answer within ${options.timeoutMs} ms` : `request failed: ${error instanceof Error ? error.message : String(error)}` };
  }
}
