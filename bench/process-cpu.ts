import { existsSync, readFileSync } from 'node:fs';

/** CPU seconds (user + system, all threads) a process has used so far, from /proc (0 when unreadable). */
export function cpuSeconds(pid: number): number {
  const path = `/proc/${pid}/stat`;
  if (!existsSync(path)) return 0;
  const fields = readFileSync(path, 'utf8').split(') ')[1]?.split(' ') ?? [];
  // Fields 14 and 15 of stat (utime, stime), in clock ticks of 1/100 s.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The PostgreSQL backends serving the database at `databaseUrl`, by pid (none without one). */
async function backendPids(databaseUrl: string | undefined): Promise<number[]> {
  if (!databaseUrl) return [];
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    return rows.map((row) => row.pid);
  } finally {
    await client.end();
  }
}

export interface CpuSnapshot {
  readonly server: number;
  readonly database: Map<number, number>;
}

/** CPU used so far by the server process and by the backends of its PostgreSQL database. */
export async function cpuSnapshot(serverPid: number, databaseUrl: string | undefined): Promise<CpuSnapshot> {
  const database = new Map<number, number>();
  for (const pid of await backendPids(databaseUrl)) database.set(pid, cpuSeconds(pid));
  return { server: cpuSeconds(serverPid), database };
}

/** CPU seconds the server and the database backends used since `before`. */
export async function cpuSince(serverPid: number, databaseUrl: string | undefined, before: CpuSnapshot): Promise<{ server: number; database: number }> {
  const after = await cpuSnapshot(serverPid, databaseUrl);
  let database = 0;
  for (const [pid, seconds] of after.database) database += seconds - (before.database.get(pid) ?? 0);
  return { server: after.server - before.server, database };
}
