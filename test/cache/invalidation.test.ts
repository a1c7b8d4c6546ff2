import pg from 'pg';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ALL_KEYS, channelOf, LocalBus, PostgresBus, RedisBus, type InvalidationBus } from '../../src/cache/invalidation.js';

/**
 * The channel that keeps several servers' caches honest. The PostgreSQL cases run when the suite
 * runs on PostgreSQL (DATABASE_URL), the Redis cases when TEST_REDIS_URL is set (CI sets both).
 */
const log = pino({ level: 'silent' });
const postgresUrl = process.env.DATABASE_URL?.startsWith('postgres') ? process.env.DATABASE_URL : undefined;
const redisUrl = process.env.TEST_REDIS_URL;
/** A channel of this file's own: other suites' servers share the database and Redis. */
const channel = channelOf(`test_${Math.random().toString(36).slice(2, 10)}`);

const opened: InvalidationBus[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((bus) => bus.close()));
});

function track<T extends InvalidationBus>(bus: T): T {
  opened.push(bus);
  return bus;
}

/** Keys received by a subscriber of `topic` on `bus`, in order. */
function received(bus: InvalidationBus, topic: string): string[] {
  const keys: string[] = [];
  bus.subscribe(topic, (key) => keys.push(key));
  return keys;
}

async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A short pause for notices that must NOT arrive. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 200));

describe('LocalBus', () => {
  it('runs subscribers of the topic at once, and only those', async () => {
    const bus = track(new LocalBus(log));
    const logins = received(bus, 'login');
    const others = received(bus, 'other');
    await bus.publish('login', 'L1');
    expect(logins).toEqual(['L1']);
    expect(others).toEqual([]);
  });

  it('keeps dispatching when one handler throws', async () => {
    const bus = track(new LocalBus(log));
    bus.subscribe('login', () => {
      throw new Error('broken handler');
    });
    const keys = received(bus, 'login');
    await bus.publish('login', 'L2');
    expect(keys).toEqual(['L2']);
  });
});

function sharedChannelCases(open: () => Promise<InvalidationBus>, interrupt: () => Promise<void>): void {
  it('delivers a notice to the other server once and to the publisher once', async () => {
    const a = track(await open());
    const b = track(await open());
    const onA = received(a, 'login');
    const onB = received(b, 'login');
    await a.publish('login', 'L3');
    expect(onA).toEqual(['L3']);
    await until(() => onB.length > 0, 'the notice on the second server');
    await settle();
    expect(onB).toEqual(['L3']);
    expect(onA).toEqual(['L3']);
  });

  it('sends an over-long key as ALL_KEYS instead of failing', async () => {
    const a = track(await open());
    const b = track(await open());
    const onB = received(b, 'search');
    await a.publish('search', 'x'.repeat(10_000));
    await until(() => onB.length > 0, 'the notice');
    expect(onB).toEqual([ALL_KEYS]);
  });

  it('tells every subscriber to drop everything after the channel was interrupted', async () => {
    const a = track(await open());
    const onA = received(a, 'login');
    await interrupt();
    await until(() => onA.includes(ALL_KEYS), 'ALL_KEYS after reconnection');
    const b = track(await open());
    const onB = received(b, 'login');
    await a.publish('login', 'L4');
    await until(() => onB.includes('L4'), 'a notice after reconnection');
  });
}

describe.runIf(postgresUrl)('PostgresBus', () => {
  sharedChannelCases(
    () => PostgresBus.open(postgresUrl!, channel, log),
    async () => {
      const admin = new pg.Client({ connectionString: postgresUrl });
      await admin.connect();
      try {
        await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'flint-invalidation' AND datname = current_database()`);
      } finally {
        await admin.end();
      }
    },
  );
});

describe.runIf(redisUrl)('RedisBus', () => {
  sharedChannelCases(
    () => RedisBus.open(redisUrl!, channel, log),
    async () => {
      const admin = new Redis(redisUrl!);
      try {
        await admin.client('KILL', 'TYPE', 'pubsub');
      } finally {
        admin.disconnect();
      }
    },
  );
});
