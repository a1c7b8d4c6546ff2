import pg from 'pg';

/**
 * Samples the replicas' lag as the primary sees it (`pg_stat_replication`) while a benchmark runs:
 * the largest replay lag, in time and in bytes of WAL, over the samples.
 */
export class ReplicaLag {
  private maxLagMs = 0;
  private maxLagBytes = 0;
  private samples = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly client: pg.Client;

  constructor(primaryUrl: string) {
    this.client = new pg.Client({ connectionString: primaryUrl });
  }

  async start(intervalMs = 200): Promise<void> {
    await this.client.connect();
    this.timer = setInterval(() => void this.sample(), intervalMs);
  }

  async stop(): Promise<string> {
    clearInterval(this.timer);
    await this.client.end();
    return `replica lag over ${this.samples} samples: at most ${this.maxLagMs} ms, ${this.maxLagBytes} bytes of WAL`;
  }

  private async sample(): Promise<void> {
    const { rows } = await this.client
      .query<{ ms: number | null; bytes: string | null }>(
        `SELECT (extract(epoch FROM replay_lag) * 1000)::int AS ms, pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint::text AS bytes
         FROM pg_stat_replication`,
      )
      .catch(() => ({ rows: [] }));
    for (const row of rows) {
      this.samples++;
      this.maxLagMs = Math.max(this.maxLagMs, row.ms ?? 0);
      this.maxLagBytes = Math.max(this.maxLagBytes, Number(row.bytes ?? 0));
    }
  }
}
