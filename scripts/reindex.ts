/**
 * `npm run reindex -- [--project <id>] [--type <ResourceType>]... [--batch-size <n>]`: rebuilds the
 * search index rows of stored resources (src/search/reindex.ts) on the database the server would
 * use: DATABASE_URL when set, the embedded database under DATA_DIR (./data) otherwise. The
 * embedded database has one process at a time: stop the server first. Pending migrations are
 * applied first, as the server does at start. Prints progress to stderr and the counts to stdout.
 */
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../src/config.js';
import { Database } from '../src/db/database.js';
import { migrate } from '../src/db/migrate.js';
import { pino } from 'pino';
import { openInvalidationBus } from '../src/cache/invalidation.js';
import { SearchCache } from '../src/cache/search-cache.js';
import { DEFAULT_BATCH_SIZE, reindex, type ReindexResult } from '../src/search/reindex.js';

export interface ReindexArguments {
  projectId?: string;
  resourceTypes?: string[];
  batchSize: number;
}

const USAGE = 'usage: npm run reindex -- [--project <id>] [--type <ResourceType>]... [--batch-size <n>]';

/** Parses the command line; throws an Error with the usage on anything it does not understand. */
export function parseArguments(argv: readonly string[]): ReindexArguments {
  const result: ReindexArguments = { batchSize: DEFAULT_BATCH_SIZE };
  for (let i = 0; i < argv.length; i++) {
    const option = argv[i];
    const value = argv[i + 1];
    if (value === undefined || value.startsWith('--')) throw new Error(`${option}: a value is missing\n${USAGE}`);
    i++;
    if (option === '--project') result.projectId = value;
    else if (option === '--type') result.resourceTypes = [...(result.resourceTypes ?? []), ...value.split(',').filter(Boolean)];
    else if (option === '--batch-size') {
      result.batchSize = Number(value);
      if (!Number.isInteger(result.batchSize) || result.batchSize < 1) throw new Error(`--batch-size must be a positive integer\n${USAGE}`);
    } else throw new Error(`Unknown option ${option}\n${USAGE}`);
  }
  return result;
}

/**
 * Opens the database of `env`, migrates it and reindexes; progress lines go to `log`. Running
 * servers hear of every batch through the cache notices (their kept search counts are void); the
 * embedded database has no other server to tell.
 */
export async function runReindex(args: ReindexArguments, env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<ReindexResult> {
  const config = loadConfig(env);
  const db = await Database.open(config);
  const searchCache = new SearchCache();
  const bus =
    db.kind === 'postgres'
      ? await openInvalidationBus({ redisUrl: config.redisUrl, namespace: config.cacheNamespace, postgresUrl: config.databaseUrl }, pino({ level: 'warn' }))
      : undefined;
  if (bus) searchCache.shareThrough(bus);
  try {
    await migrate(db);
    const started = Date.now();
    let lastPrinted = 0;
    return await reindex(db, {
      projectId: args.projectId,
      resourceTypes: args.resourceTypes,
      batchSize: args.batchSize,
      searchCache,
      onProgress: (progress) => {
        // At most one line a second; the counts per type are printed at the end.
        const now = Date.now();
        if (now - lastPrinted < 1000) return;
        lastPrinted = now;
        const rate = Math.round(progress.total / Math.max((now - started) / 1000, 0.001));
        log(`${progress.resourceType}: ${progress.resources} reindexed (${progress.total} in all, ${rate}/s)`);
      },
    });
  } finally {
    await searchCache.flush();
    await Promise.all([bus?.close(), db.close()]);
  }
}

async function main(): Promise<void> {
  let args: ReindexArguments;
  try {
    args = parseArguments(process.argv.slice(2));
  } catch (error) {
    console.error((error as Error).message);
    process.exit(2);
  }
  const result = await runReindex(args, process.env, (line) => console.error(line));
  for (const entry of result.byType) console.log(`${entry.resourceType}\t${entry.resources}`);
  console.log(`Reindexed ${result.resources} resources`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
