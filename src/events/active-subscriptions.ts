import { ALL_KEYS, changedResourceOf, resourceChangedTopic, type InvalidationBus } from '../cache/invalidation.js';
import type { SqlExecutor } from '../db/database.js';
import { search } from '../search/service.js';
import type { SearchConfig } from '../search/search-services.js';
import type { Subscription } from './subscription.js';

/** The most Subscriptions of one project a change is matched against. */
const MAX_SUBSCRIPTIONS = 1000;
/** Projects whose Subscriptions are kept; the least recently used ones go first. */
const MAX_PROJECTS = 10_000;

/**
 * The active Subscriptions of each project, kept in memory: both whether a write is recorded in
 * the outbox (a project without any pays one lookup per server, then nothing) and what a change
 * is matched against. Loaded on a project's first use and dropped by the cache notice of every
 * committed Subscription write, on every server; at most MAX_PROJECTS projects are held.
 */
/** A project's list, where its load went, and whether it has come back. */
interface Held {
  readonly list: Promise<Subscription[]>;
  readonly db: SqlExecutor;
  settled: boolean;
}

export class ActiveSubscriptions {
  private readonly projects = new Map<string, Held>();

  constructor(
    private readonly config: SearchConfig,
    private readonly maxProjects = MAX_PROJECTS,
  ) {}

  /** Keeps the lists in step with Subscription writes of every server. */
  listen(bus: InvalidationBus): void {
    bus.subscribe(resourceChangedTopic('Subscription'), (key) => {
      if (key === ALL_KEYS) this.projects.clear();
      else {
        const changed = changedResourceOf(key);
        if (changed) this.projects.delete(changed.projectId);
      }
    });
  }

  /** `db`: where a lookup may go (a write's transaction when there is one: it may hold the only connection). */
  of(db: SqlExecutor, projectId: string): Promise<Subscription[]> {
    let held = this.projects.get(projectId);
    // A load still under way elsewhere may wait for the very connection `db` holds (the embedded
    // database's only one, or the last of a pool taken by such transactions): waiting for it would
    // never end, so `db` reads the list itself.
    if (held && !held.settled && held.db !== db) return load(db, this.config, projectId);
    if (held) {
      // Most recently used last: Map keeps insertion order, the first key is the one to drop.
      this.projects.delete(projectId);
    } else {
      held = this.loading(db, projectId);
    }
    this.projects.set(projectId, held);
    if (this.projects.size > this.maxProjects) this.projects.delete(this.projects.keys().next().value!);
    return held.list;
  }

  private loading(db: SqlExecutor, projectId: string): Held {
    const held: Held = { list: load(db, this.config, projectId), db, settled: false };
    held.list.then(
      () => (held.settled = true),
      () => {
        if (this.projects.get(projectId) === held) this.projects.delete(projectId);
      },
    );
    return held;
  }

  /** How many projects are held (for tests of the bound). */
  get size(): number {
    return this.projects.size;
  }
}

async function load(db: SqlExecutor, config: SearchConfig, projectId: string): Promise<Subscription[]> {
  const services = { db, identity: { projectId, superAdmin: false }, config };
  const result = await search(services, 'Subscription', [['status', 'active'], ['_count', String(MAX_SUBSCRIPTIONS)]]);
  return result.matches.map((row) => JSON.parse(row.text) as Subscription);
}
