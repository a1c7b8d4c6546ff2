import { Redis } from 'ioredis';
import type { Logger } from 'pino';

/**
 * Values every server reads and writes (Redis, when REDIS_URL is set): what one server learnt at
 * some cost, such as an identity provider's answer, the others reuse. Best effort: a failed call
 * is logged and treated as a miss, so the caller falls back to doing the work itself.
 */
export interface SharedStore {
  get(key: string): Promise<string | undefined>;
  /** Stores `value` for `ttlMs` milliseconds. */
  set(key: string, value: string, ttlMs: number): Promise<void>;
  close(): Promise<void>;
}

export class RedisStore implements SharedStore {
  private constructor(
    private readonly client: Redis,
    private readonly prefix: string,
    private readonly log: Logger,
  ) {}

  /** Keys are `<namespace>:<key>` (config CACHE_NAMESPACE). */
  static async open(url: string, namespace: string, log: Logger): Promise<RedisStore> {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
    await client.connect();
    // Errors are retried by ioredis; without a listener they would be unhandled.
    client.on('error', (error: Error) => log.debug({ err: error }, 'Redis store error'));
    return new RedisStore(client, `${namespace}:`, log);
  }

  async get(key: string): Promise<string | undefined> {
    try {
      return (await this.client.get(this.prefix + key)) ?? undefined;
    } catch (error) {
      this.log.warn({ err: error }, 'shared store read failed; treating it as a miss');
      return undefined;
    }
  }

  async set(key: string, value: string, ttlMs: number): Promise<void> {
    if (ttlMs <= 0) return;
    try {
      await this.client.set(this.prefix + key, value, 'PX', Math.ceil(ttlMs));
    } catch (error) {
      this.log.warn({ err: error }, 'shared store write failed');
    }
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }
}
