import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { Logger } from 'pino';

/**
 * Cross-server notices for per-server caches (DESIGN 1: caches are per instance and safe to lose).
 * A server that changes something other servers may hold in memory (a revoked login, a changed
 * SearchParameter, a login failure to count) publishes `(topic, key)`; every server, itself
 * included, runs the handlers subscribed to that topic. Delivery is best effort and fast (a few
 * ms); when the channel was interrupted, notices may have been missed, so every handler is called
 * with ALL_KEYS and must drop everything it holds for the topic.
 *
 * Transports: Redis pub/sub when REDIS_URL is set; PostgreSQL LISTEN/NOTIFY on a PostgreSQL
 * database (every server shares it, so several servers work without Redis); in-process only on
 * the embedded database, whose server is the only one.
 */
export interface InvalidationBus {
  readonly kind: 'local' | 'postgres' | 'redis';
  /** Tells every server, this one at once and the others through the channel. Never throws. */
  publish(topic: string, key: string): Promise<void>;
  subscribe(topic: string, handler: InvalidationHandler): void;
  /** Whether this server listens to `topic` (every server runs the same code, so do the others). */
  hasSubscribers(topic: string): boolean;
  close(): Promise<void>;
}

export type InvalidationHandler = (key: string) => void;

/** The key handlers receive when notices may have been lost: drop everything of the topic. */
export const ALL_KEYS = '*';

/** Longest message: PostgreSQL refuses NOTIFY payloads of 8,000 bytes or more. */
const MAX_MESSAGE_BYTES = 7_900;

/** The channel of a namespace (config CACHE_NAMESPACE: `[a-z0-9_]+`, so a valid identifier once quoted). */
export function channelOf(namespace: string): string {
  return `${namespace}_invalidation`;
}
const RECONNECT_DELAY_MS = 1_000;

interface Message {
  /** The publishing server: it has already dispatched its own message. */
  readonly o: string;
  readonly t: string;
  readonly k: string;
}

/** Dispatch to subscribers; the base of every transport. */
abstract class Subscribers {
  protected readonly origin = randomUUID();
  private readonly handlers = new Map<string, InvalidationHandler[]>();

  constructor(protected readonly log: Logger) {}

  subscribe(topic: string, handler: InvalidationHandler): void {
    const list = this.handlers.get(topic);
    if (list) list.push(handler);
    else this.handlers.set(topic, [handler]);
  }

  hasSubscribers(topic: string): boolean {
    return this.handlers.has(topic);
  }

  protected dispatch(topic: string, key: string): void {
    for (const handler of this.handlers.get(topic) ?? []) {
      try {
        handler(key);
      } catch (error) {
        this.log.error({ err: error, topic }, 'cache invalidation handler failed');
      }
    }
  }

  /** After an interruption: every topic drops everything. */
  protected dispatchAll(): void {
    for (const topic of this.handlers.keys()) this.dispatch(topic, ALL_KEYS);
  }

  protected encode(topic: string, key: string): string {
    const text = JSON.stringify({ o: this.origin, t: topic, k: key } satisfies Message);
    if (Buffer.byteLength(text) < MAX_MESSAGE_BYTES) return text;
    this.log.error({ topic }, 'cache invalidation key too long to send; sending ALL_KEYS');
    return JSON.stringify({ o: this.origin, t: topic, k: ALL_KEYS } satisfies Message);
  }

  /** A message from the channel; our own were dispatched when published. */
  protected receive(text: string): void {
    let message: Message;
    try {
      message = JSON.parse(text) as Message;
    } catch {
      this.log.warn('ignoring a malformed cache invalidation message');
      return;
    }
    if (message.o !== this.origin && typeof message.t === 'string' && typeof message.k === 'string') {
      this.dispatch(message.t, message.k);
    }
  }
}

/** The embedded database has one server: notices stay in the process. */
export class LocalBus extends Subscribers implements InvalidationBus {
  readonly kind = 'local';

  async publish(topic: string, key: string): Promise<void> {
    this.dispatch(topic, key);
  }

  async close(): Promise<void> {}
}

/**
 * LISTEN/NOTIFY on a connection of its own (a pooled connection would lose the LISTEN). A lost
 * connection is reopened after a second; then every cache drops everything, since notices sent
 * meanwhile are gone.
 */
export class PostgresBus extends Subscribers implements InvalidationBus {
  readonly kind = 'postgres';
  private client: pg.Client | undefined;
  private closed = false;
  private reconnectTimer: NodeJS.Timeout | undefined;
  /** The notice being sent, which the next waits for. */
  private sending: Promise<void> = Promise.resolve();

  private constructor(
    private readonly connectionString: string,
    private readonly channel: string,
    log: Logger,
  ) {
    super(log);
  }

  static async open(connectionString: string, channel: string, log: Logger): Promise<PostgresBus> {
    const bus = new PostgresBus(connectionString, channel, log);
    await bus.connect();
    return bus;
  }

  async publish(topic: string, key: string): Promise<void> {
    this.dispatch(topic, key);
    const client = this.client;
    if (!client) return;
    // One statement at a time on the one connection (pg deprecates queueing on a busy client).
    const sent = this.sending.then(() => client.query('SELECT pg_notify($1, $2)', [this.channel, this.encode(topic, key)]));
    this.sending = sent.then(
      () => undefined,
      () => undefined,
    );
    try {
      await sent;
    } catch (error) {
      this.log.warn({ err: error, topic }, 'could not send a cache invalidation notice');
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.connectionString, application_name: 'flint-invalidation' });
    client.on('notification', (notice) => {
      if (notice.channel === this.channel && notice.payload) this.receive(notice.payload);
    });
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client));
    await client.connect();
    await client.query(`LISTEN "${this.channel}"`);
    this.client = client;
  }

  private lost(client: pg.Client, error?: Error): void {
    if (this.closed || this.client !== client) return;
    this.client = undefined;
    this.log.warn({ err: error }, 'cache invalidation channel lost; reconnecting');
    client.end().catch(() => undefined);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    this.reconnectTimer = setTimeout(() => {
      this.connect().then(
        () => {
          this.log.info('cache invalidation channel back; dropping cached state');
          this.dispatchAll();
        },
        (error: unknown) => {
          this.log.warn({ err: error }, 'cache invalidation channel still down');
          if (!this.closed) this.scheduleReconnect();
        },
      );
    }, RECONNECT_DELAY_MS);
    this.reconnectTimer.unref();
  }
}

/**
 * Redis pub/sub: a subscriber connection and a publishing one (a subscribed connection cannot
 * publish). ioredis reconnects by itself; every reconnection of the subscriber drops all cached state.
 */
export class RedisBus extends Subscribers implements InvalidationBus {
  readonly kind = 'redis';

  private constructor(
    private readonly subscriber: Redis,
    private readonly publisher: Redis,
    private readonly channel: string,
    log: Logger,
  ) {
    super(log);
  }

  static async open(url: string, channel: string, log: Logger): Promise<RedisBus> {
    const options = { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false };
    const subscriber = new Redis(url, options);
    const publisher = new Redis(url, options);
    const bus = new RedisBus(subscriber, publisher, channel, log);
    try {
      await Promise.all([subscriber.connect(), publisher.connect()]);
      await subscriber.subscribe(channel);
    } catch (error) {
      subscriber.disconnect();
      publisher.disconnect();
      throw error;
    }
    subscriber.on('message', (received: string, text: string) => {
      if (received === channel) bus.receive(text);
    });
    let ready = true;
    subscriber.on('close', () => {
      if (ready) log.warn('cache invalidation channel (Redis) lost; reconnecting');
      ready = false;
    });
    subscriber.on('ready', () => {
      if (ready) return;
      ready = true;
      log.info('cache invalidation channel (Redis) back; dropping cached state');
      bus.dispatchAll();
    });
    // Errors are retried by ioredis; without a listener they would be unhandled.
    subscriber.on('error', (error: Error) => log.debug({ err: error }, 'Redis subscriber error'));
    publisher.on('error', (error: Error) => log.debug({ err: error }, 'Redis publisher error'));
    return bus;
  }

  async publish(topic: string, key: string): Promise<void> {
    this.dispatch(topic, key);
    try {
      await this.publisher.publish(this.channel, this.encode(topic, key));
    } catch (error) {
      this.log.warn({ err: error, topic }, 'could not send a cache invalidation notice');
    }
  }

  async close(): Promise<void> {
    this.subscriber.disconnect();
    this.publisher.disconnect();
  }
}

/**
 * The topic of committed writes of a resource type; the key is `<projectId>/<id>`. The repository
 * publishes it only for types some cache subscribed to (auth: memberships, policies, logins...).
 */
export function resourceChangedTopic(resourceType: string): string {
  return `resource:${resourceType}`;
}

/** The parts of a resourceChangedTopic key; ALL_KEYS gives undefined. */
export function changedResourceOf(key: string): { projectId: string; id: string } | undefined {
  const slash = key.indexOf('/');
  return key === ALL_KEYS || slash < 0 ? undefined : { projectId: key.slice(0, slash), id: key.slice(slash + 1) };
}

export interface BusSettings {
  readonly redisUrl: string | undefined;
  /** CACHE_NAMESPACE: servers with the same one hear each other. */
  readonly namespace: string;
  /** Set when the database is PostgreSQL. */
  readonly postgresUrl: string | undefined;
}

/** Redis when configured, else PostgreSQL's channel, else in-process (embedded database). */
export async function openInvalidationBus(settings: BusSettings, log: Logger): Promise<InvalidationBus> {
  const channel = channelOf(settings.namespace);
  if (settings.redisUrl) return RedisBus.open(settings.redisUrl, channel, log);
  if (settings.postgresUrl) return PostgresBus.open(settings.postgresUrl, channel, log);
  return new LocalBus(log);
}
