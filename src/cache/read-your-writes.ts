import type { Logger } from 'pino';
import type { Database, QueryOptions, Row, SqlExecutor } from '../db/database.js';
import type { Lsn, Reader, Replica, ReplicaSet } from '../db/replicas.js';
import { ALL_KEYS, type InvalidationBus } from './invalidation.js';
import { isClientClosed } from '../db/cancellation.js';
import { OperationOutcomeError } from '../fhir/outcome.js';
import { isLostConnection, sqlStateOf } from '../db/sql-state.js';

/**
 * Read-your-writes over read replicas (docs/replicas.md). After a caller's write commits, the
 * primary's WAL position is read and told to every server on the cache-notice channel (Redis or
 * PostgreSQL); until a replica has replayed that position, the caller's reads go to the primary.
 * A caller is its Login (a token), else its membership.
 *
 * When the channel was interrupted, marks may have been missed: every caller then reads from the
 * primary until the replicas have replayed what the primary had written when the channel came back.
 */

/** The bus topic of write marks; keys are `<hex LSN> <caller>`. */
export const WRITE_MARK_TOPIC = 'write-mark';

/** Marks kept at most; beyond, the oldest are folded into the floor every caller must wait for. */
const MAX_MARKS = 100_000;

/** Where a request's reads go, chosen per statement from what the server knows now. */
export interface ReadSession {
  /** Where the next read goes: a replica that has replayed the caller's writes, or the primary. */
  reader(): Reader;
  /** From now on this request reads from the primary (an operation that writes). */
  usePrimary(): void;
  /** Marks the caller's writes made through other connections than `primary` (accounts the auth service writes). */
  wrote(): Promise<void>;
  /** The database as this request writes through it: every committed write is marked. */
  readonly primary: Database;
}

/** Without replicas: every read on the primary, nothing recorded. */
export function primaryOnly(db: Database): ReadSession {
  let session = primarySessions.get(db);
  if (!session) {
    const reader: Reader = { db, replica: false };
    session = { reader: () => reader, usePrimary: () => undefined, wrote: async () => undefined, primary: db };
    primarySessions.set(db, session);
  }
  return session;
}

/** One session per database: it holds no state, and a request's reads made one each. */
const primarySessions = new WeakMap<Database, ReadSession>();

/** The caller a write mark belongs to. */
export function callerOf(identity: { readonly loginId?: string; readonly membershipId?: string; readonly subject?: string }): string {
  return identity.loginId ?? identity.membershipId ?? identity.subject ?? 'anonymous';
}

export class ReadYourWrites {
  /** Per caller, what a replica must have replayed before it serves them (insertion order: oldest first). */
  private readonly marks = new Map<string, Lsn>();
  /** What every caller waits for; undefined while it is being learnt (reads go to the primary). */
  private floor: Lsn | undefined = 0n;

  constructor(
    readonly replicas: ReplicaSet,
    private readonly primary: Database,
    private readonly bus: InvalidationBus,
    private readonly log: Logger,
  ) {
    bus.subscribe(WRITE_MARK_TOPIC, (key) => (key === ALL_KEYS ? this.marksLost() : this.heard(key)));
  }

  session(caller: string): ReadSession {
    return new RoutedSession(this, caller, this.primary);
  }

  /** What a replica must have replayed to serve `caller`; undefined: only the primary will do. */
  floorOf(caller: string): Lsn | undefined {
    if (this.floor === undefined) return undefined;
    const mark = this.marks.get(caller);
    return mark !== undefined && mark > this.floor ? mark : this.floor;
  }

  /** After `caller`'s write committed: marks it, here at once and on every server through the channel. */
  async wrote(caller: string): Promise<void> {
    let lsn: Lsn;
    try {
      lsn = await this.replicas.primaryPosition();
    } catch (error) {
      this.log.warn({ err: error }, 'could not read the primary WAL position after a write; reading from the primary until it is known');
      this.marksLost();
      return;
    }
    await this.bus.publish(WRITE_MARK_TOPIC, `${lsn.toString(16)} ${caller}`);
  }

  private heard(key: string): void {
    const space = key.indexOf(' ');
    if (space <= 0) return;
    const lsn = BigInt(`0x${key.slice(0, space)}`);
    const caller = key.slice(space + 1);
    const previous = this.marks.get(caller);
    if (previous !== undefined && previous >= lsn) return;
    this.marks.delete(caller);
    this.marks.set(caller, lsn);
    if (this.marks.size > MAX_MARKS) this.prune();
  }

  /** Drops marks every replica has replayed; if still too many, the oldest raise the floor. */
  private prune(): void {
    let replayedByAll: Lsn | undefined;
    for (const replica of this.replicas.replicas) {
      if (replayedByAll === undefined || replica.replayed < replayedByAll) replayedByAll = replica.replayed;
    }
    for (const [caller, lsn] of this.marks) {
      if (replayedByAll !== undefined && lsn <= replayedByAll) this.marks.delete(caller);
    }
    // Down to nine tenths, so that the next marks do not each pay for a pass over all of them.
    for (const [caller, lsn] of this.marks) {
      if (this.marks.size <= MAX_MARKS * 0.9) break;
      this.marks.delete(caller);
      if (this.floor !== undefined && lsn > this.floor) this.floor = lsn;
    }
  }

  /** Marks may have been missed: everyone reads from the primary until the replicas have replayed what it has now. */
  private marksLost(): void {
    const before = this.floor ?? 0n;
    this.floor = undefined;
    this.replicas.primaryPosition().then(
      (lsn) => (this.floor = lsn > before ? lsn : before),
      (error: unknown) => {
        this.log.warn({ err: error }, 'could not read the primary WAL position; retrying');
        setTimeout(() => this.marksLost(), 1_000).unref();
      },
    );
  }
}

class RoutedSession implements ReadSession {
  readonly primary: Database;
  private pinned = false;
  /** The replica this request reads from, kept while it serves the caller: one snapshot source per request where possible. */
  private current: { replica: Replica; reader: Reader } | undefined;
  private readonly onPrimary: Reader;

  constructor(
    private readonly routing: ReadYourWrites,
    private readonly caller: string,
    db: Database,
  ) {
    this.onPrimary = { db, replica: false };
    this.primary = markingWrites(db, () => routing.wrote(caller));
  }

  reader(): Reader {
    if (this.pinned) return this.onPrimary;
    const floor = this.routing.floorOf(this.caller);
    if (floor === undefined) return this.onPrimary;
    const replicas = this.routing.replicas;
    if (this.current && replicas.usable(this.current.replica, floor)) return this.current.reader;
    const replica = replicas.choose(floor);
    if (!replica) return this.onPrimary;
    this.current = { replica, reader: { db: new FallingBack(replica, replicas, this.onPrimary.db), replica: true } };
    return this.current.reader;
  }

  usePrimary(): void {
    this.pinned = true;
  }

  wrote(): Promise<void> {
    return this.routing.wrote(this.caller);
  }
}

/**
 * A replica's reads. A statement the replica could not run as such (no connection, a server
 * shutting down, a recovery conflict, a table a migration has not brought to it yet) runs on the
 * primary instead; without a connection the replica is also skipped until a poll reaches it again.
 * An error of the statement itself (bad input, a statement timeout) is the caller's, as on the
 * primary: running it there again would only double its cost.
 */
class FallingBack implements SqlExecutor {
  constructor(
    private readonly replica: Replica,
    private readonly replicas: ReplicaSet,
    private readonly primary: SqlExecutor,
  ) {}

  async query<R = Row>(sql: string, args?: readonly unknown[], options?: QueryOptions): Promise<R[]> {
    try {
      return await this.replica.db.query<R>(sql, args, options);
    } catch (error) {
      const failure = replicaFailure(error);
      if (failure === 'statement' || isClientClosed(error)) throw error;
      if (failure === 'unreachable') this.replicas.unreachable(this.replica);
      return this.primary.query<R>(sql, args, options);
    }
  }

  execute(): Promise<number> {
    throw new Error('a replica reader runs no writes');
  }
}

/** Driver adapter error kinds (@prisma/driver-adapter-utils) that mean no connection. */
const UNREACHABLE_KINDS = new Set(['DatabaseNotReachable', 'ConnectionClosed', 'SocketTimeout', 'TlsConnectionError', 'TooManyConnections']);

/**
 * SQLSTATEs only a replica gives our statements: a recovery conflict cancelled it (40001: reads
 * here are never serializable), or it has not replayed a migration yet (undefined table, column
 * or function).
 */
const REPLICA_ONLY_STATES = new Set(['40001', '42P01', '42703', '42883']);

/**
 * What a replica's error says: `statement` for PostgreSQL refusing the statement as it would on
 * the primary, or an answer already made for the client (a statement timeout's 503);
 * `unreachable` for no connection (or SQLSTATE classes 08, 53, 57P: connection, resources, server
 * shutting down); `replica` for anything else the replica alone may cause.
 */
function replicaFailure(error: unknown): 'statement' | 'unreachable' | 'replica' {
  if (error instanceof OperationOutcomeError) return 'statement';
  const state = sqlStateOf(error);
  if (state !== undefined) {
    if (/^(08|53|57P)/.test(state)) return 'unreachable';
    return REPLICA_ONLY_STATES.has(state) ? 'replica' : 'statement';
  }
  const kind = (error as { cause?: { kind?: unknown } } | undefined)?.cause?.kind;
  // The adapter's kinds for no connection; pg's own errors (statements sent straight to the pool) say it otherwise.
  return (typeof kind === 'string' && UNREACHABLE_KINDS.has(kind)) || isLostConnection(error) ? 'unreachable' : 'replica';
}

/** The database with every committed write followed by `marked` (a view: the pool is the database's own). */
function markingWrites(db: Database, marked: () => Promise<void>): Database {
  const view = Object.create(db) as Database;
  return Object.assign(view, {
    query: db.query.bind(db),
    async execute(sql: string, args?: readonly unknown[], options?: QueryOptions): Promise<number> {
      const count = await db.execute(sql, args, options);
      await marked();
      return count;
    },
    noteWrite: marked,
    async transaction<T>(work: (tx: SqlExecutor) => Promise<T>): Promise<T> {
      const result = await db.transaction(work);
      await marked();
      return result;
    },
  });
}
