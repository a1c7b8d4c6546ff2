import { spawnSync, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { startServerProcess } from '../helpers/server.js';

const TOKEN = 'metrics-token-of-the-tests';
const HEALTH_SERIES = 'flint_http_request_duration_seconds_count{method="GET",route="/healthcheck",status="200"}';

function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

async function scrape(url: string): Promise<string> {
  const res = await fetch(url, { headers: { Authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  return res.text();
}

// WORKERS needs PostgreSQL; the primary may take up to 120 s to listen on a busy machine.
describe.skipIf(!process.env.DATABASE_URL)('metrics with WORKERS=2', { timeout: 150_000 }, () => {
  let child: ChildProcess | undefined;
  afterAll(() => {
    if (!child) return;
    // Workers outlive a primary killed with SIGKILL: stop them first.
    const out = spawnSync('ps', ['-o', 'pid=', '--ppid', String(child.pid)], { encoding: 'utf8' }).stdout;
    for (const pid of out.split('\n').map((l) => Number(l.trim())).filter((p) => p > 0)) process.kill(pid, 'SIGKILL');
    child.kill('SIGKILL');
  });

  it('adds up the requests of every worker, on METRICS_PORT and through any worker on the server port', async () => {
    const metricsPort = 20000 + Math.floor(Math.random() * 12000);
    const server = await startServerProcess({ WORKERS: '2', METRICS_TOKEN: TOKEN, METRICS_PORT: String(metricsPort) });
    child = server.child;
    const onOwnPort = `http://127.0.0.1:${metricsPort}/metrics`;
    const before = sample(await scrape(onOwnPort), HEALTH_SERIES);
    // The primary hands connections to the workers in turn: new connections reach both.
    for (let i = 0; i < 10; i++) {
      expect((await fetch(`${server.url}/healthcheck`, { headers: { Connection: 'close' } })).status).toBe(200);
    }
    expect(sample(await scrape(onOwnPort), HEALTH_SERIES) - before).toBe(10);
    expect(sample(await scrape(`${server.url}/metrics`), HEALTH_SERIES) - before).toBe(10);
  });
});
