import type { Logger } from 'pino';
import type { InvalidationBus } from '../../cache/invalidation.js';
import type { Config } from '../../config.js';
import type { Resource } from '../../fhir/types.js';
import type { StorageServices } from '../../storage/repository.js';
import { systemRepository } from '../../auth/accounts.js';
import type { OutboxRow } from '../outbox.js';
import { eventMessage } from './messages.js';

/** The notice topic of matched WebSocket events; every server hears it, the one holding the socket sends. */
const EVENT_TOPIC = 'subscription:websocket';

type MatchedVersion = Pick<OutboxRow, 'projectId' | 'resourceType' | 'resourceId' | 'versionId' | 'interaction'>;

interface EventNotice extends MatchedVersion {
  readonly subscriptionIds: readonly string[];
}

/** Subscriptions named by one notice: well under the channel's longest message (7,900 bytes). */
const IDS_PER_NOTICE = 100;

/** What the hub sends: the event's message, and what it is about, for the owner's access check. */
export interface SocketEvent {
  readonly subscriptionId: string;
  readonly resourceType: string;
  readonly id: string;
  /** The version the event carries. */
  readonly versionId: string;
  readonly deleted: boolean;
  /** The event's text, numbered as the socket counts the events it was sent. */
  message(eventNumber: number): string;
}

/**
 * One socket as the hub sees it: it checks its owner's access before it sends an event, and
 * counts only the events it sent, so that neither its event numbers nor its heartbeats tell of
 * events its owner may not see.
 */
export interface BoundSocket {
  deliver(event: SocketEvent): void;
  /** A `heartbeat` for one of its Subscriptions, with the events it was sent for it. */
  heartbeat(subscriptionId: string): void;
}

export type HubLimits = Pick<Config, 'wsMaxConnections' | 'wsMaxConnectionsPerProject' | 'wsHeartbeatMs' | 'fhirBaseUrl'>;

/**
 * The WebSocket subscriptions of one server: which of its sockets are bound to which
 * Subscription, the connection counts its limits are checked against, and the fan-out of matched
 * events. A worker that matches a change to websocket Subscriptions publishes a notice naming the
 * version and those Subscriptions on the cache notice channel (Redis, LISTEN/NOTIFY, or
 * in-process); every server hears it, and one holding sockets bound to some of them reads the
 * version once and sends it to each.
 * No retries: a socket that is not connected when the notice arrives misses the event.
 */
export class WebSocketHub {
  private readonly bySubscription = new Map<string, Set<BoundSocket>>();
  private readonly perProject = new Map<string, number>();
  private open = 0;
  private unbound = 0;
  private readonly heartbeats: NodeJS.Timeout | undefined;

  constructor(
    private readonly bus: InvalidationBus,
    private readonly storage: StorageServices,
    private readonly limits: HubLimits,
    private readonly log: Logger,
  ) {
    bus.subscribe(EVENT_TOPIC, (key) => void this.deliver(key));
    // One timer for every socket, rather than one each.
    if (limits.wsHeartbeatMs > 0) this.heartbeats = setInterval(() => this.heartbeat(), limits.wsHeartbeatMs).unref();
  }

  close(): void {
    clearInterval(this.heartbeats);
  }

  /** A `heartbeat` Bundle for each bound Subscription, to each of its sockets. */
  private heartbeat(): void {
    for (const [subscriptionId, sockets] of this.bySubscription) {
      for (const socket of sockets) socket.heartbeat(subscriptionId);
    }
  }

  /** Tells every server of a version matched to websocket Subscriptions (one notice per hundred of them). */
  async publish(version: MatchedVersion, subscriptionIds: readonly string[]): Promise<void> {
    for (let at = 0; at < subscriptionIds.length; at += IDS_PER_NOTICE) {
      const notice: EventNotice = { ...pickVersion(version), subscriptionIds: subscriptionIds.slice(at, at + IDS_PER_NOTICE) };
      await this.bus.publish(EVENT_TOPIC, JSON.stringify(notice));
    }
  }

  /**
   * Takes a place for a new, not yet bound socket; false when the server holds its most sockets,
   * or when not-yet-bound ones hold a quarter of them (so that upgrades from unknown clients
   * cannot take the places of bound ones).
   */
  admitConnection(): boolean {
    if (this.open >= this.limits.wsMaxConnections) return false;
    if (this.unbound >= Math.max(1, Math.floor(this.limits.wsMaxConnections / 4))) return false;
    this.open++;
    this.unbound++;
    return true;
  }

  /** The socket's first binding: it now counts for its project; false when the project holds its most. */
  admitToProject(projectId: string): boolean {
    const count = this.perProject.get(projectId) ?? 0;
    if (count >= this.limits.wsMaxConnectionsPerProject) return false;
    this.perProject.set(projectId, count + 1);
    this.unbound--;
    return true;
  }

  /** An admitted upgrade that never became a socket (a failed handshake). */
  abandoned(): void {
    this.open--;
    this.unbound--;
  }

  /** A socket closed: its place, its project's place and its bindings are freed. */
  closed(socket: BoundSocket, projectId: string | undefined, subscriptionIds: Iterable<string>): void {
    // A socket without a project never bound anything.
    if (projectId === undefined) return this.abandoned();
    this.open--;
    const count = (this.perProject.get(projectId) ?? 1) - 1;
    if (count > 0) this.perProject.set(projectId, count);
    else this.perProject.delete(projectId);
    for (const subscriptionId of subscriptionIds) this.unbind(socket, subscriptionId);
  }

  bind(socket: BoundSocket, subscriptionId: string): void {
    let sockets = this.bySubscription.get(subscriptionId);
    if (!sockets) this.bySubscription.set(subscriptionId, (sockets = new Set()));
    sockets.add(socket);
  }

  unbind(socket: BoundSocket, subscriptionId: string): void {
    const sockets = this.bySubscription.get(subscriptionId);
    if (!sockets) return;
    sockets.delete(socket);
    if (sockets.size === 0) this.bySubscription.delete(subscriptionId);
  }

  /** Open sockets and bound Subscriptions of this server, for the health check and tests. */
  load(): { sockets: number; subscriptions: number } {
    return { sockets: this.open, subscriptions: this.bySubscription.size };
  }

  /** Sends a notice's event to this server's sockets of its Subscriptions; the version is read once. */
  private async deliver(key: string): Promise<void> {
    const notice = parseNotice(key);
    const bound = notice?.subscriptionIds.filter((id) => this.bySubscription.has(id)) ?? [];
    if (!notice || bound.length === 0) return;
    try {
      const resource = await this.readVersion(notice);
      const focus = `${notice.resourceType}/${notice.resourceId}`;
      for (const subscriptionId of bound) {
        const message = (eventNumber: number) => eventMessage({ subscriptionId, eventNumber, focus, resource, fullUrl: `${this.limits.fhirBaseUrl}/${focus}` });
        const event = { subscriptionId, resourceType: notice.resourceType, id: notice.resourceId, versionId: notice.versionId, deleted: notice.interaction === 'delete', message };
        for (const socket of this.bySubscription.get(subscriptionId) ?? []) socket.deliver(event);
      }
    } catch (error) {
      this.log.warn({ err: error, focus: `${notice.resourceType}/${notice.resourceId}` }, 'a websocket subscription event could not be sent');
    }
  }

  private async readVersion(notice: EventNotice): Promise<Resource | undefined> {
    if (notice.interaction === 'delete') return undefined;
    const repo = systemRepository(this.storage, notice.projectId);
    const version = await repo.readHistoryVersion(notice.resourceType, notice.resourceId, notice.versionId);
    return version.text ? (JSON.parse(version.text) as Resource) : undefined;
  }
}

function pickVersion(version: MatchedVersion): MatchedVersion {
  const { projectId, resourceType, resourceId, versionId, interaction } = version;
  return { projectId, resourceType, resourceId, versionId, interaction };
}

/** A notice's key; undefined for ALL_KEYS (a reconnected channel: events missed meanwhile are lost) and anything malformed. */
function parseNotice(key: string): EventNotice | undefined {
  try {
    const notice = JSON.parse(key) as Partial<EventNotice>;
    return Array.isArray(notice.subscriptionIds) && typeof notice.resourceId === 'string' ? (notice as EventNotice) : undefined;
  } catch {
    return undefined;
  }
}
