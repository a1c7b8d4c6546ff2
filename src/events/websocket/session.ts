import type { Logger } from 'pino';
import type { RawData, WebSocket } from 'ws';
import type { ServerKeys } from '../../auth/keys.js';
import type { Config } from '../../config.js';
import type { StorageServices } from '../../storage/repository.js';
import { systemRepository } from '../../auth/accounts.js';
import type { Viewer } from '../author-access.js';
import type { Subscription } from '../subscription.js';
import { BindingTokenError, verifyBindingToken, type BindingGrant } from './binding-token.js';
import type { BoundSocket, SocketEvent, WebSocketHub } from './hub.js';
import { errorMessage, handshakeMessage, heartbeatMessage, parseClientMessage, PONG } from './messages.js';

export type SessionLimits = Pick<Config, 'baseUrl' | 'wsMaxBindingsPerSocket' | 'wsBindTimeoutMs' | 'wsIdleTimeoutMs'>;

export interface SessionServices {
  readonly hub: WebSocketHub;
  readonly keys: ServerKeys;
  readonly storage: StorageServices;
  readonly config: SessionLimits;
  /**
   * What a membership may see now (its AccessPolicy), undefined when it no longer exists or is
   * inactive: checked on bind and before each event is sent. Supplied by the access layer, cached.
   */
  viewerOf(membershipId: string): Promise<Viewer | undefined>;
  readonly log: Logger;
}

/** WebSocket close code for a policy violation (RFC 6455). */
const POLICY_VIOLATION = 1008;

/**
 * One socket of `/ws/subscriptions-r4`: `ping` answered `pong`, `bind-with-token` checked (token,
 * Subscription still active and websocket, membership still active, limits) and answered with a
 * handshake, `unbind-from-token` by the token it bound with. A socket serves one project (its
 * first binding's). Anything unexpected gets an OperationOutcome and the socket is closed; a
 * socket with no binding after WS_BIND_TIMEOUT_MS, or silent for WS_IDLE_TIMEOUT_MS (no message,
 * no pong to the server's pings), is closed.
 */
export class SubscriptionSocket implements BoundSocket {
  private projectId: string | undefined;
  /** Bound Subscriptions by the token that bound them (unbind names the token). */
  private readonly bindings = new Map<string, string>();
  /** The membership each bound Subscription was bound for (none for internal callers). */
  private readonly owners = new Map<string, string | undefined>();
  /** Events sent per bound Subscription since it was bound (eventsSinceSubscriptionStart). */
  private readonly sent = new Map<string, number>();
  private readonly bindTimer: NodeJS.Timeout;
  private readonly idleTimer: NodeJS.Timeout;
  private readonly pingTimer: NodeJS.Timeout;
  private ended = false;
  /** Messages are handled one at a time, in order (a bind's checks are asynchronous). */
  private queue: Promise<void> = Promise.resolve();
  /** Events are sent in the order the hub gave them, each after its access check. */
  private outgoing: Promise<void> = Promise.resolve();

  constructor(
    private readonly socket: WebSocket,
    private readonly services: SessionServices,
  ) {
    const { wsBindTimeoutMs, wsIdleTimeoutMs } = services.config;
    this.bindTimer = setTimeout(() => this.refuse('security', `No Subscription was bound within ${wsBindTimeoutMs} ms`), wsBindTimeoutMs);
    this.idleTimer = setTimeout(() => this.socket.terminate(), wsIdleTimeoutMs);
    this.pingTimer = setInterval(() => this.socket.ping(), Math.max(50, Math.floor(wsIdleTimeoutMs / 2)));
    socket.on('message', (data, isBinary) => {
      this.idleTimer.refresh();
      this.queue = this.queue
        .then(() => this.receive(data, isBinary))
        .catch((error: unknown) => services.log.warn({ err: error }, 'a websocket message failed'));
    });
    socket.on('pong', () => this.idleTimer.refresh());
    socket.on('error', (error) => services.log.debug({ err: error }, 'websocket error'));
    socket.on('close', () => this.end());
  }

  send(text: string): void {
    if (!this.ended) this.socket.send(text);
  }

  /**
   * An event of a bound Subscription: sent when the binding's owner may still see the resource
   * (AccessPolicy); a membership that ended closes the socket, as a bind would be refused.
   */
  deliver(event: SocketEvent): void {
    const owner = this.owners.get(event.subscriptionId);
    if (owner === undefined) return this.sendEvent(event);
    this.outgoing = this.outgoing
      .then(async () => {
        const viewer = await this.services.viewerOf(owner);
        if (!viewer) return this.refuse('security', 'The membership the binding token was issued to has ended');
        if (await viewer.sees(event.resourceType, event.id, event.versionId, event.deleted)) this.sendEvent(event);
      })
      .catch((error: unknown) => this.services.log.warn({ err: error }, 'a websocket event could not be checked; not sent'));
  }

  heartbeat(subscriptionId: string): void {
    this.send(heartbeatMessage(subscriptionId, this.sent.get(subscriptionId) ?? 0));
  }

  private sendEvent(event: SocketEvent): void {
    const eventNumber = (this.sent.get(event.subscriptionId) ?? 0) + 1;
    this.sent.set(event.subscriptionId, eventNumber);
    this.send(event.message(eventNumber));
  }

  private async receive(data: RawData, isBinary: boolean): Promise<void> {
    if (this.ended) return;
    const message = isBinary ? undefined : parseClientMessage(rawText(data));
    if (!message) return this.refuse('invalid', 'Messages are JSON: {"type":"ping"}, {"type":"bind-with-token","payload":{"token":"..."}} or {"type":"unbind-from-token","payload":{"token":"..."}}');
    if (message.type === 'ping') return this.send(PONG);
    if (message.type === 'unbind-from-token') return this.unbind(message.payload.token);
    try {
      await this.bind(message.payload.token);
    } catch (error) {
      if (error instanceof BindingTokenError) return this.refuse('security', error.message);
      this.services.log.warn({ err: error }, 'binding a websocket subscription failed');
      this.refuse('exception', 'The binding could not be checked: try again');
    }
  }

  private async bind(token: string): Promise<void> {
    const grant = await verifyBindingToken(this.services.keys, this.services.config.baseUrl, token);
    if (this.projectId !== undefined && grant.projectId !== this.projectId) throw new BindingTokenError('This socket serves another project: open one socket per project');
    if (!this.bindings.has(token) && this.bindings.size >= this.services.config.wsMaxBindingsPerSocket) {
      throw new BindingTokenError(`A socket binds at most ${this.services.config.wsMaxBindingsPerSocket} Subscriptions`);
    }
    await this.checkGrant(grant);
    if (this.ended) return;
    if (this.projectId === undefined) {
      if (!this.services.hub.admitToProject(grant.projectId)) {
        return this.refuse('throttled', 'The project holds its most WebSocket connections on this server: close one, or retry later');
      }
      this.projectId = grant.projectId;
      clearTimeout(this.bindTimer);
    }
    this.bindings.set(token, grant.subscriptionId);
    this.owners.set(grant.subscriptionId, grant.membershipId);
    this.services.hub.bind(this, grant.subscriptionId);
    this.send(handshakeMessage(grant.subscriptionId));
  }

  /** What was true when the token was issued still holds: the Subscription and the caller's membership. */
  private async checkGrant(grant: BindingGrant): Promise<void> {
    const repo = systemRepository(this.services.storage, grant.projectId);
    const subscription = (await repo.readResource('Subscription', grant.subscriptionId).catch(() => undefined)) as Subscription | undefined;
    if (!subscription || subscription.status !== 'active' || subscription.channel?.type !== 'websocket') {
      throw new BindingTokenError(`Subscription/${grant.subscriptionId} is no longer an active websocket Subscription`);
    }
    if (grant.membershipId && !(await this.services.viewerOf(grant.membershipId))) {
      throw new BindingTokenError('The membership the binding token was issued to has ended');
    }
  }

  private unbind(token: string): void {
    const subscriptionId = this.bindings.get(token);
    if (subscriptionId === undefined) return;
    this.bindings.delete(token);
    if ([...this.bindings.values()].includes(subscriptionId)) return;
    this.owners.delete(subscriptionId);
    this.sent.delete(subscriptionId);
    this.services.hub.unbind(this, subscriptionId);
  }

  private refuse(code: Parameters<typeof errorMessage>[0], text: string): void {
    this.send(errorMessage(code, text));
    this.socket.close(POLICY_VIOLATION, text.slice(0, 120));
    this.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    clearTimeout(this.bindTimer);
    clearTimeout(this.idleTimer);
    clearInterval(this.pingTimer);
    this.services.hub.closed(this, this.projectId, new Set(this.bindings.values()));
  }
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data as ArrayBuffer).toString('utf8');
}
