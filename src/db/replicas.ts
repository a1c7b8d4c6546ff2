import type { Config } from '../config.js';
import type { Database, SqlExecutor } from './database.js';

/** A WAL position (`X/Y` in PostgreSQL's text form) as a number of bytes. */
export type Lsn = bigint;

/** Where one read goes: a replica, or the primary itself. */
export interface Reader {
  readonly db: SqlExecutor;
  readonly replica: boolean;
}

/** Samples of the primary's position kept to tell a replica's lag in time. */
const MAX_SAMPLES = 10_000;

/** `X/Y` (hexadecimal halves) as bytes. */
export function parseLsn(text: string): Lsn {
  const slash = text.indexOf('/');
  return (BigInt(`0x${text.slice(0, slash)}`) << 32n) + BigInt(`0x${text.slice(slash + 1)}`);
}

/**
 * The primary's WAL insert position, told as a replica tells what it has replayed: where no record
 * has started on the current page yet, PostgreSQL gives the position after the page header, while
 * a replica that replayed everything before it reports the page's start. Without this, an idle
 * primary that stopped at such a place would look forever ahead of its replicas.
 */
export function comparableLsn(insert: Lsn, blockSize: bigint, segmentSize: bigint): Lsn {
  if (insert % segmentSize === LONG_PAGE_HEADER) return insert - LONG_PAGE_HEADER;
  if (insert % blockSize === SHORT_PAGE_HEADER) return insert - SHORT_PAGE_HEADER;
  return insert;
}
/** MAXALIGN'd sizes of XLogPageHeaderData and XLogLongPageHeaderData. */
const SHORT_PAGE_HEADER = 24n;
const LONG_PAGE_HEADER = 40n;

/** One replica: its database and what its last poll found. */
export class Replica {
  /** What it had replayed at the last poll (0 until then). */
  replayed: Lsn = 0n;
  /** False when its last poll failed, or a read on it failed to reach it. */
  reachable = false;
  /** When it had last replayed everything the primary had written (ms clock; 0: never seen). */
  caughtUpAt = 0;

  constructor(
    readonly name: string,
    readonly db: Database,
  ) {}
}

/**
 * The read replicas of a PostgreSQL primary (DATABASE_READ_URL, docs/replicas.md). Every
 * DATABASE_READ_POLL_MS one statement per database learns the primary's WAL position and each
 * replica's replayed one; reads are then routed from memory, never with a statement of their own.
 * A replica is usable while it answers and is at most DATABASE_READ_MAX_LAG_MS behind: it has
 * replayed everything the primary had written that long ago.
 */
export class ReplicaSet {
  readonly replicas: readonly Replica[];
  /** The primary's positions at recent polls, oldest first. */
  private readonly samples: { at: number; lsn: Lsn }[] = [];
  private next = 0;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;

  private constructor(
    private readonly primary: Database,
    replicas: readonly Replica[],
    private readonly settings: { maxLagMs: number; pollMs: number; blockSize: bigint; segmentSize: bigint },
    private readonly onError: (replica: string, error: unknown) => void,
  ) {
    this.replicas = replicas;
  }

  static async open(
    primary: Database,
    config: Pick<Config, 'databaseReadUrls' | 'databaseReadMaxLagMs' | 'databaseReadPollMs' | 'databasePoolSize' | 'databasePreparedStatements'>,
    open: (url: string) => Promise<Database>,
    onError: (replica: string, error: unknown) => void,
  ): Promise<ReplicaSet> {
    const [sizes] = await primary.query<{ block: number; segment: string }>(
      "SELECT current_setting('wal_block_size')::int AS block, current_setting('wal_segment_size') AS segment",
    );
    const replicas = await Promise.all(config.databaseReadUrls.map(async (url, index) => new Replica(`replica ${index + 1}`, await open(url))));
    const set = new ReplicaSet(primary, replicas, {
      maxLagMs: config.databaseReadMaxLagMs,
      pollMs: config.databaseReadPollMs,
      blockSize: BigInt(sizes.block),
      segmentSize: BigInt(sizeInBytes(sizes.segment)),
    }, onError);
    await set.poll();
    set.timer = setInterval(() => void set.poll(), config.databaseReadPollMs);
    set.timer.unref();
    return set;
  }

  /** The primary's position now: what a replica must have replayed to show what was committed before. */
  async primaryPosition(): Promise<Lsn> {
    const [row] = await this.primary.query<{ lsn: string }>('SELECT pg_current_wal_insert_lsn()::text AS lsn');
    return comparableLsn(parseLsn(row.lsn), this.settings.blockSize, this.settings.segmentSize);
  }

  /**
   * A usable replica that has replayed `floor` (round robin among them), or undefined: read from
   * the primary.
   */
  choose(floor: Lsn): Replica | undefined {
    const count = this.replicas.length;
    for (let i = 0; i < count; i++) {
      const replica = this.replicas[(this.next + i) % count];
      if (this.usable(replica, floor)) {
        this.next = (this.next + i + 1) % count;
        return replica;
      }
    }
    return undefined;
  }

  usable(replica: Replica, floor: Lsn): boolean {
    return replica.reachable && replica.replayed >= floor && Date.now() - replica.caughtUpAt <= this.settings.maxLagMs;
  }

  /** The least any reachable replica has replayed (undefined when none is reachable). */
  leastReplayed(): Lsn | undefined {
    let least: Lsn | undefined;
    for (const replica of this.replicas) {
      if (replica.reachable && (least === undefined || replica.replayed < least)) least = replica.replayed;
    }
    return least;
  }

  /** A read on it could not reach it: skipped until a poll reaches it again. */
  unreachable(replica: Replica): void {
    replica.reachable = false;
  }

  /** One poll at a time: a slow database must not pile up statements. */
  poll(): Promise<void> {
    this.polling ??= this.pollOnce().finally(() => (this.polling = undefined));
    return this.polling;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.polling;
    await Promise.all(this.replicas.map((replica) => replica.db.close()));
  }

  private async pollOnce(): Promise<void> {
    // The primary first: a replica is then compared with a position it could already have reached.
    const at = Date.now();
    try {
      this.remember(at, await this.primaryPosition());
    } catch (error) {
      this.onError('primary', error);
    }
    await Promise.all(this.replicas.map((replica) => this.pollReplica(replica)));
  }

  private remember(at: number, lsn: Lsn): void {
    this.samples.push({ at, lsn });
    const oldest = at - this.settings.maxLagMs - this.settings.pollMs;
    let drop = 0;
    // Keep one sample older than the bound: the replica may have caught up with it.
    while (drop + 1 < this.samples.length && this.samples[drop + 1].at < oldest) drop++;
    if (this.samples.length - drop > MAX_SAMPLES) drop = this.samples.length - MAX_SAMPLES;
    if (drop > 0) this.samples.splice(0, drop);
  }

  private async pollReplica(replica: Replica): Promise<void> {
    try {
      const [row] = await replica.db.query<{ lsn: string | null }>('SELECT pg_last_wal_replay_lsn()::text AS lsn');
      // A server that is not in recovery has no replay position: it is no replica of anything.
      if (row.lsn === null) throw new Error(`${replica.name} is not a streaming replica (pg_last_wal_replay_lsn() is null)`);
      replica.replayed = parseLsn(row.lsn);
      replica.caughtUpAt = this.caughtUpAt(replica.replayed, replica.caughtUpAt);
      replica.reachable = true;
    } catch (error) {
      if (replica.reachable) this.onError(replica.name, error);
      replica.reachable = false;
    }
  }

  /** The time of the newest sample of the primary that `replayed` includes. */
  private caughtUpAt(replayed: Lsn, previous: number): number {
    for (let i = this.samples.length - 1; i >= 0; i--) {
      if (this.samples[i].lsn <= replayed) return Math.max(previous, this.samples[i].at);
    }
    return previous;
  }
}

/** `16MB`, `8kB`... as PostgreSQL shows sizes (wal_segment_size). */
function sizeInBytes(text: string): number {
  const match = /^(\d+)\s*(B|kB|MB|GB)?$/.exec(text.trim());
  if (!match) throw new Error(`unexpected wal_segment_size "${text}"`);
  const unit = { B: 1, kB: 1024, MB: 1024 ** 2, GB: 1024 ** 3 }[match[2] ?? 'B']!;
  return Number(match[1]) * unit;
}
