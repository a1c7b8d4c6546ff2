import { randomUUID } from 'node:crypto';
import { outcome, issue } from '../../fhir/outcome.js';
import type { IssueType } from '../../fhir/resources.js';
import type { Resource } from '../../fhir/types.js';

/**
 * The messages of `/ws/subscriptions-r4`, shaped as Medplum's server sends them so that its
 * client (`SubscriptionManager`, `subscribeToCriteria`) reads them unchanged: `history` Bundles
 * whose first entry is a SubscriptionStatus (`handshake` on bind, `event-notification` with the
 * resource as second entry), `{"type":"pong"}`, and OperationOutcomes for refusals.
 */
export type ClientMessage =
  | { type: 'ping' }
  | { type: 'bind-with-token'; payload: { token: string } }
  | { type: 'unbind-from-token'; payload: { token: string } };

/** A client's text as one of its messages; undefined for anything else. */
export function parseClientMessage(text: string): ClientMessage | undefined {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof message !== 'object' || message === null) return undefined;
  const { type, payload } = message as { type?: unknown; payload?: { token?: unknown } };
  if (type === 'ping') return { type };
  if ((type === 'bind-with-token' || type === 'unbind-from-token') && typeof payload?.token === 'string' && payload.token) {
    return { type, payload: { token: payload.token } };
  }
  return undefined;
}

export const PONG = JSON.stringify({ type: 'pong' });

export function errorMessage(code: IssueType, text: string): string {
  return JSON.stringify(outcome([issue(code, text)]));
}

function statusBundle(status: Record<string, unknown>, more: Record<string, unknown>[] = []): Record<string, unknown> {
  return {
    resourceType: 'Bundle',
    id: randomUUID(),
    type: 'history',
    timestamp: new Date().toISOString(),
    entry: [{ resource: { resourceType: 'SubscriptionStatus', id: randomUUID(), status: 'active', ...status } }, ...more],
  };
}

export function handshakeMessage(subscriptionId: string): string {
  return JSON.stringify(statusBundle({ type: 'handshake', subscription: { reference: `Subscription/${subscriptionId}` } }));
}

/** A `heartbeat` SubscriptionStatus: the Subscription is alive, with the events sent for it so far. */
export function heartbeatMessage(subscriptionId: string, eventsSent: number): string {
  return JSON.stringify(statusBundle({ type: 'heartbeat', subscription: { reference: `Subscription/${subscriptionId}` }, eventsSinceSubscriptionStart: String(eventsSent) }));
}

export interface EventNotification {
  readonly subscriptionId: string;
  /** Events of the Subscription this socket was sent since it bound it (this one included). */
  readonly eventNumber: number;
  /** `Type/id` of the changed resource. */
  readonly focus: string;
  /** The version written; absent for a delete. */
  readonly resource?: Resource;
  readonly fullUrl: string;
}

export function eventMessage(event: EventNotification): string {
  const timestamp = new Date().toISOString();
  const status = {
    type: 'event-notification',
    subscription: { reference: `Subscription/${event.subscriptionId}` },
    eventsSinceSubscriptionStart: String(event.eventNumber),
    notificationEvent: [{ eventNumber: String(event.eventNumber), timestamp, focus: { reference: event.focus } }],
  };
  return JSON.stringify(statusBundle(status, event.resource ? [{ fullUrl: event.fullUrl, resource: event.resource }] : []));
}
