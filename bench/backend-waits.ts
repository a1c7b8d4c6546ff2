import pg from 'pg';

/**
 * What a database's backends were doing during a measured window, sampled from pg_stat_activity
 * every few milliseconds: on average how many were running a statement (or runnable), waiting for
 * the WAL to be flushed (their commit: `IO:WALSync` is the flush itself, `LWLock:WALWrite` a wait
 * for another backend's flush that may cover theirs), or waiting on anything else. And the WAL the
 * whole cluster wrote meanwhile (pg_stat_wal: every database's, so per create only on a quiet
 * machine), with the part that were full-page images.
 */
export interface BackendWaits {
  readonly running: number;
  readonly walFlush: number;
  readonly otherWaits: number;
  readonly walBytes: number;
  readonly fullPageImages: number;
}

const WAL_FLUSH = new Set(['IO:WALSync', 'LWLock:WALWrite', 'IO:WALWrite']);

export async function sampleBackendWaits(databaseUrl: string, database: string): Promise<() => Promise<BackendWaits>> {
  // Connected to another database, so its own statements do not count in this one's commits.
  const elsewhere = new URL(databaseUrl);
  elsewhere.pathname = '/postgres';
  const client = new pg.Client({ connectionString: elsewhere.toString() });
  await client.connect();
  const walBefore = await walSoFar(client);
  let samples = 0;
  let running = 0;
  let walFlush = 0;
  let otherWaits = 0;
  let stopped = false;
  const sampling = (async () => {
    while (!stopped) {
      const { rows } = await client.query<{ wait: string | null }>(
        `SELECT wait_event_type || ':' || wait_event AS wait FROM pg_stat_activity
         WHERE datname = $1 AND backend_type = 'client backend' AND state = 'active' AND pid <> pg_backend_pid()`,
        [database],
      );
      samples++;
      for (const { wait } of rows) {
        if (wait === null) running++;
        else if (WAL_FLUSH.has(wait)) walFlush++;
        else otherWaits++;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  return async () => {
    stopped = true;
    await sampling;
    const walAfter = await walSoFar(client);
    await client.end();
    const per = (count: number) => count / Math.max(1, samples);
    return {
      running: per(running),
      walFlush: per(walFlush),
      otherWaits: per(otherWaits),
      walBytes: walAfter.bytes - walBefore.bytes,
      fullPageImages: walAfter.fpi - walBefore.fpi,
    };
  };
}

async function walSoFar(client: pg.Client): Promise<{ bytes: number; fpi: number }> {
  const { rows } = await client.query<{ bytes: string; fpi: string }>('SELECT wal_bytes::text AS bytes, wal_fpi::text AS fpi FROM pg_stat_wal');
  return { bytes: Number(rows[0].bytes), fpi: Number(rows[0].fpi) };
}
