import { execFileSync, spawnSync, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { eventually, patientBody, startServerProcess, superAdminClient, testEnv } from '../helpers/server.js';

/** The pids of a process's children (the workers of a primary), from ps. */
function childPids(parent: ChildProcess): number[] {
  const out = spawnSync('ps', ['-o', 'pid=', '--ppid', String(parent.pid)], { encoding: 'utf8' }).stdout;
  return out.split('\n').map((line) => Number(line.trim())).filter((pid) => pid > 0);
}

async function until<T>(probe: () => T, done: (value: T) => boolean): Promise<T> {
  let value = probe();
  for (let i = 0; i < 200 && !done(value); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    value = probe();
  }
  return value;
}

/** A worker may have exited between ps and the kill. */
function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * The status of /healthcheck; 0 when refused or unanswered within 2 s. A connection the cluster's
 * primary hands to a worker at the moment it is killed is never answered, and fetch would wait
 * for it as long as undici's headers timeout (300 s).
 */
function healthStatus(url: string): Promise<number> {
  return fetch(`${url}/healthcheck`, { signal: AbortSignal.timeout(2000) }).then((r) => r.status, () => 0);
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

describe('WORKERS', () => {
  it('above 1 without DATABASE_URL is refused at start, naming the setting', () => {
    const env = { ...process.env, ...testEnv({ DATABASE_URL: '', WORKERS: '2' }) };
    let status: number | null = null;
    let stderr = '';
    try {
      execFileSync(process.execPath, ['--import', 'tsx', 'src/main.ts'], { env: env as NodeJS.ProcessEnv, stdio: 'pipe', encoding: 'utf8' });
    } catch (error) {
      ({ status, stderr } = error as { status: number; stderr: string });
    }
    expect(status).toBe(2);
    expect(stderr).toContain('WORKERS above 1 needs DATABASE_URL');
  });

  // A primary started by startServerProcess may take up to 120 s to listen on a busy machine.
  describe.skipIf(!process.env.DATABASE_URL)('on PostgreSQL', { timeout: 150_000 }, () => {
    const started: ChildProcess[] = [];
    // Workers outlive a primary killed with SIGKILL: kill them first, wherever a test stopped.
    afterAll(() => {
      for (const child of started) {
        for (const pid of childPids(child)) killQuietly(pid);
        child.kill('SIGKILL');
      }
    });

    async function startWorkers() {
      const server = await startServerProcess({ WORKERS: '2' });
      started.push(server.child);
      return server;
    }

    it('serves from two worker processes sharing the port', async () => {
      const { url, child } = await startWorkers();
      expect(await until(() => childPids(child), (pids) => pids.length === 2)).toHaveLength(2);
      const client = superAdminClient(url);
      const created = await client.post('/Patient', patientBody());
      expect(created.status).toBe(201);
      expect((await client.get(`/Patient/${created.body.id}`)).status).toBe(200);
    });

    it('replaces a worker that dies', async () => {
      const { url, child } = await startWorkers();
      const [first, second] = await until(() => childPids(child), (pids) => pids.length === 2);
      process.kill(first, 'SIGKILL');
      const now = await until(() => childPids(child), (pids) => pids.length === 2 && !pids.includes(first));
      expect(now).toContain(second);
      expect(now).not.toContain(first);
      expect(now).toHaveLength(2);
      // Until a worker listens again (the second, or the replacement: a worker start, up to two
      // minutes on a loaded machine as startServerProcess allows) the port refuses connections.
      expect(await eventually(() => healthStatus(url), 200, 120_000)).toBe(200);
    }, 270_000);

    it('stops every worker on SIGTERM and exits 0', async () => {
      const { child } = await startWorkers();
      const workers = await until(() => childPids(child), (pids) => pids.length === 2);
      const exited = exitOf(child);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      const alive = workers.filter((pid) => spawnSync('kill', ['-0', String(pid)]).status === 0);
      expect(alive).toEqual([]);
    });
  });
});
