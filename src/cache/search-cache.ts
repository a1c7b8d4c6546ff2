import { isClientClosed } from '../db/cancellation.js';
import { ALL_KEYS, type InvalidationBus } from './invalidation.js';
import { Kept, type Entry } from './kept-answers.js';

/**
 * Search answers kept until a write could change them: exact counts (`_total=accurate`,
 * `_summary=count`) everywhere, and on the embedded database the pages of matches too. An exact
 * count of 50,000 matches reads 50,000 index rows, a real cost in CPU (measured: see
 * bench/RESULTS.md), and sixteen clients asking at once for the same few totals would queue on a
 * small machine; on the embedded database a page costs its worker a statement (run in
 * WebAssembly) while the rest of the request is cheap. An answer stays valid while no write has been heard of for what it depends on: the searched types
 * in its project (or the whole project, when the search follows references to other types).
 * Searches that read value sets (`:in`, `:not-in`) are never kept: terminology writes are not
 * resource writes.
 *
 * Soundness rests on the order "commit, then tell": every writer of resources or index rows calls
 * `written` after its commit (Repository, the Login writer, reindex, $clone), and an answer
 * remembers the clock from before its statement was sent. A write told after that point voids the
 * answer, whether or not the statement saw it; a write told before it committed before the
 * statement's snapshot, so the answer includes it. Other servers' writes arrive through the
 * invalidation bus, batched for a few milliseconds: across servers a count may lag a write by that
 * delay (and after a lost channel everything is dropped). Pages are kept only where this process is
 * the database's only writer (the embedded database), so they never lag. Entries also expire after
 * MAX_AGE_MS, a bound for a notice lost without the channel noticing.
 */

/** The bus topic of resource writes; keys are `project/type` pairs joined by commas. */
export const RESOURCES_WRITTEN_TOPIC = 'resources-written';

const MAX_ENTRIES = 2_000;
/** Pages kept at most, and rows in them (a REST page keeps its resources' JSON). */
const MAX_PAGES = 2_000;
const MAX_PAGE_ROWS = 20_000;
const MAX_AGE_MS = 60_000;
/**
 * Planner estimates (`_total=estimate`) are kept for this long, whatever is written: they come from
 * table statistics, which change only when the table is analysed, and are approximate by contract.
 */
const ESTIMATE_AGE_MS = 10_000;
/** How long writes are collected before other servers are told (one notice for many writes). */
const PUBLISH_DELAY_MS = 5;
/**
 * A pair (project/type) is announced at most once per interval: writes of it that follow a notice
 * within the interval wait for the interval's end. Other servers therefore keep no answer that
 * depends on a pair for 2 intervals after they hear of it (NOTICE_INTERVAL_MS: the time to
 * the next notice, and as much again for its delivery): while writes go on they count anew, and
 * the lag a write's notice may have is still PUBLISH_DELAY_MS.
 */
const NOTICE_INTERVAL_MS = 100;
const BUSY_MS = 2 * NOTICE_INTERVAL_MS;
/**
 * Characters of keys per notice, well under the bus's payload limit (7,900 bytes with its
 * envelope; ids are ASCII): a longer notice would reach other servers as ALL_KEYS.
 */
const NOTICE_KEY_CHARS = 7_000;
/** The type of a write that may have touched every type of a project. */
const ANY_TYPE = '#';

/** Whose writes an answer depends on: the projects (undefined: every project) and types (undefined: every type). */
export interface WriteDependency {
  readonly projectIds: readonly string[] | undefined;
  readonly types: readonly string[] | undefined;
}

/** Estimates depend on no write (see ESTIMATE_AGE_MS). */
const ALWAYS_VALID = (): boolean => true;

/** The key of a statement's answer: its text and its arguments. */
export function statementKey(sql: string, args: readonly unknown[]): string {
  return `${sql}\u0000${JSON.stringify(args)}`;
}

export interface SearchCacheOptions {
  /** Keep pages of matches: only where this process is the database's only writer. */
  readonly keepsPages?: boolean;
}

export class SearchCache {
  /** A logical clock: every write heard of and every forget moves it on. */
  private clock = 0;
  /** Counts taken before this clock value are void (everything was forgotten). */
  private floor = 0;
  /** The clock value of the last write heard of, by dependency key. */
  private readonly lastWrite = new Map<string, number>();
  private readonly counts = new Kept<number>(MAX_ENTRIES, Infinity);
  private readonly pages: Kept<unknown> | undefined;
  private readonly estimates = new Kept<number>(MAX_ENTRIES, Infinity);
  /** Exact counts being taken now, by statement (countOnce). */
  private readonly countsUnderWay = new Map<string, Entry<Promise<number>>>();
  /** When other servers' notices say a key is being written, until when (see NOTICE_INTERVAL_MS). */
  private readonly busyUntil = new Map<string, number>();
  private pending = new Set<string>();
  private publishTimer: NodeJS.Timeout | undefined;
  /** Pairs written within NOTICE_INTERVAL_MS of their last notice, and when that was. */
  private deferred = new Set<string>();
  private deferTimer: NodeJS.Timeout | undefined;
  private readonly lastSent = new Map<string, number>();
  private publishing = false;
  private bus: InvalidationBus | undefined;
  private readonly valid = (entry: Entry<unknown>): boolean => this.stillValid(entry);
  /** Lookups of exact counts that found one and that did not, for the metrics. */
  countHits = 0;
  countMisses = 0;

  constructor(options: SearchCacheOptions = {}) {
    this.pages = options.keepsPages ? new Kept(MAX_PAGES, MAX_PAGE_ROWS) : undefined;
  }

  /** Whether pages of matches are kept (`getPage`, `setPage`). */
  get keepsPages(): boolean {
    return this.pages !== undefined;
  }

  /** Other servers' writes void this server's counts, and this server's writes are told to them. */
  shareThrough(bus: InvalidationBus): void {
    this.bus = bus.kind === 'local' ? undefined : bus;
    bus.subscribe(RESOURCES_WRITTEN_TOPIC, (key) => {
      if (key === ALL_KEYS) this.forgetAll();
      // The bus hands a server its own notices too (synchronously, while publishing): this server
      // heard of those writes when they committed, and hearing them again would void the answers
      // taken since (a count asked for right after a write, before its notice went out).
      else if (!this.publishing) for (const pair of key.split(',')) this.heard(pair, Date.now() + BUSY_MS);
    });
  }

  /** Call before sending a statement whose answer may be kept; pass the result to `set`/`setPage`. */
  now(): number {
    return this.clock;
  }

  get(statement: string, now = Date.now()): number | undefined {
    const count = this.counts.get(statement, this.valid, now);
    if (count === undefined) this.countMisses++;
    else this.countHits++;
    return count;
  }

  /**
   * The exact count of `statement`, taken by `take` and kept (`set`), or the one this server is
   * taking now for the same statement when no write it depends on has been heard of since that
   * one's statement was sent: that answer is then as valid for this request as a kept one would
   * be, and sixteen clients asking at once for a total nobody has counted run one count, not
   * sixteen. A request that waited for another's count whose client went away (its statement
   * cancelled) takes its own.
   */
  countOnce(statement: string, dependency: WriteDependency, take: () => Promise<number>): Promise<number> {
    const underWay = this.countsUnderWay.get(statement);
    if (underWay && this.stillValid(underWay)) {
      return underWay.value.catch((error: unknown) => (isClientClosed(error) ? this.countOnce(statement, dependency, take) : Promise.reject(error)));
    }
    const at = this.now();
    const value = take();
    const entry: Entry<Promise<number>> = { value, keys: dependencyKeys(dependency), at, expires: Infinity, weight: 1 };
    this.countsUnderWay.set(statement, entry);
    // Settled before any waiter's own handler runs, so that a waiter taking its own count after a failure leads it.
    const settled = () => {
      if (this.countsUnderWay.get(statement) === entry) this.countsUnderWay.delete(statement);
    };
    value.then((count) => {
      settled();
      this.set(statement, dependency, at, count);
    }, settled);
    return value;
  }

  /** A number kept with `set` under a key that is no count (a fact about a project), uncounted in the hit rates. */
  getKept(key: string, now = Date.now()): number | undefined {
    return this.counts.get(key, this.valid, now);
  }

  set(statement: string, dependency: WriteDependency, at: number, value: number): void {
    this.keep(this.counts, statement, dependency, at, value, 1);
  }

  /** A page of matches kept for `statement` (with its arguments), when pages are kept and still valid. */
  getPage<T>(statement: string, now = Date.now()): T | undefined {
    return this.pages?.get(statement, this.valid, now) as T | undefined;
  }

  setPage<T>(statement: string, dependency: WriteDependency, at: number, page: T, rows: number): void {
    if (this.pages) this.keep(this.pages, statement, dependency, at, page, rows);
  }

  private keep<T>(store: Kept<T>, statement: string, dependency: WriteDependency, at: number, value: T, weight: number): void {
    const entry: Entry<T> = { value, keys: dependencyKeys(dependency), at, expires: Date.now() + MAX_AGE_MS, weight };
    // A write heard of while the statement ran: its answer may or may not include it.
    if (this.stillValid(entry)) store.set(statement, entry);
  }

  /**
   * Whether no write `dependency` depends on has been heard of since `at` (a value of `now()` taken
   * before the answer's statements were sent): an answer taken then is still what a search now
   * would see, within the lag other servers' notices have (a page read ahead, src/http/read-ahead.ts).
   */
  unchangedSince(dependency: WriteDependency, at: number): boolean {
    return this.stillValid({ value: undefined, keys: dependencyKeys(dependency), at, expires: Infinity, weight: 0 });
  }

  /** The planner's estimate for a search's statement, when one was taken in the last ESTIMATE_AGE_MS. */
  getEstimate(statement: string, now = Date.now()): number | undefined {
    return this.estimates.get(statement, ALWAYS_VALID, now);
  }

  setEstimate(statement: string, value: number): void {
    this.estimates.set(statement, { value, keys: [], at: this.clock, expires: Date.now() + ESTIMATE_AGE_MS, weight: 1 });
  }

  /** After a commit that wrote resources (or their index rows) of `resourceType` in `projectId`. */
  written(projectId: string, resourceType: string): void {
    const pair = `${projectId}/${resourceType}`;
    this.heard(pair);
    if (this.bus) this.queueNotice(pair);
  }

  /**
   * After writes to any types of one project (a clone into it, its expunge). Writes always name
   * their project: on a server shared by many projects, one project's clone voids none of the
   * others' kept answers. Everything is forgotten only when notices were lost (ALL_KEYS).
   */
  writtenAnywhere(projectId: string): void {
    this.written(projectId, ANY_TYPE);
  }

  forgetAll(): void {
    this.floor = ++this.clock;
    this.counts.clear();
    this.pages?.clear();
    this.estimates.clear();
  }

  /** Sends the notices still waiting for their batch (before the bus closes). */
  async flush(): Promise<void> {
    clearTimeout(this.publishTimer);
    clearTimeout(this.deferTimer);
    for (const pair of this.deferred) this.pending.add(pair);
    this.deferred = new Set();
    await this.publishPending();
  }

  /** A write of `pair` heard of; from another server's notice, `busyUntil` says until when the pair counts as being written. */
  private heard(pair: string, busyUntil?: number): void {
    const slash = pair.indexOf('/');
    const project = pair.slice(0, slash);
    const type = pair.slice(slash + 1);
    const tick = ++this.clock;
    // A write of one type in one project changes what four kinds of count see: of that type in that
    // project, of any type in that project, of that type in every project (a super admin's), of all.
    const keys = type === ANY_TYPE ? [`${project}/${ANY_TYPE}`, `*/${ANY_TYPE}`] : [`${project}/${type}`, `${project}/*`, `*/${type}`, '*/*'];
    for (const key of keys) {
      this.lastWrite.set(key, tick);
      if (busyUntil !== undefined) this.busyUntil.set(key, busyUntil);
    }
  }

  private stillValid(entry: Entry<unknown>): boolean {
    if (entry.at < this.floor) return false;
    const now = Date.now();
    const after = (key: string) => (this.lastWrite.get(key) ?? 0) > entry.at || (this.busyUntil.get(key) ?? 0) > now;
    return !entry.keys.some((key) => after(key) || after(`${key.slice(0, key.indexOf('/'))}/${ANY_TYPE}`));
  }

  private queueNotice(pair: string): void {
    const since = Date.now() - (this.lastSent.get(pair) ?? -Infinity);
    if (since < NOTICE_INTERVAL_MS) {
      this.deferred.add(pair);
      // Pairs deferred later go with the first one's notice: sooner than needed is still correct.
      this.deferTimer ??= setTimeout(() => this.sendDeferred(), NOTICE_INTERVAL_MS - since);
      this.deferTimer.unref();
      return;
    }
    this.pending.add(pair);
    if (this.publishTimer) return;
    this.publishTimer = setTimeout(() => void this.publishPending(), PUBLISH_DELAY_MS);
    this.publishTimer.unref();
  }

  private sendDeferred(): void {
    this.deferTimer = undefined;
    for (const pair of this.deferred) this.pending.add(pair);
    this.deferred = new Set();
    clearTimeout(this.publishTimer);
    void this.publishPending();
  }

  private async publishPending(): Promise<void> {
    this.publishTimer = undefined;
    const pairs = [...this.pending];
    this.pending = new Set();
    const now = Date.now();
    for (const [pair, at] of this.lastSent) if (now - at >= NOTICE_INTERVAL_MS) this.lastSent.delete(pair);
    for (const pair of pairs) this.lastSent.set(pair, now);
    const sent: Promise<void>[] = [];
    this.publishing = true;
    try {
      for (const notice of noticesOf(pairs)) if (this.bus) sent.push(this.bus.publish(RESOURCES_WRITTEN_TOPIC, notice));
    } finally {
      this.publishing = false;
    }
    await Promise.all(sent);
  }
}

/** The keys a count depends on: `project/type`, `*` standing for every project or every type. */
function dependencyKeys({ projectIds, types }: WriteDependency): string[] {
  const projects = projectIds ?? ['*'];
  const typeKeys = types ?? ['*'];
  return projects.flatMap((project) => typeKeys.map((type) => `${project}/${type}`));
}

/** `pairs` joined by commas, as few notices as fit NOTICE_KEY_CHARS each. */
function noticesOf(pairs: readonly string[]): string[] {
  const notices: string[] = [];
  let notice = '';
  for (const pair of pairs) {
    if (notice !== '' && notice.length + 1 + pair.length > NOTICE_KEY_CHARS) {
      notices.push(notice);
      notice = '';
    }
    notice = notice === '' ? pair : `${notice},${pair}`;
  }
  if (notice !== '') notices.push(notice);
  return notices;
}
