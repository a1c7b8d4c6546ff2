import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { patientBody, superAdminClient, testEnv } from '../helpers/server.js';

/**
 * The request line a server writes on stdout: the fast path's reads write it without pino's generic
 * formatting and stdout gets it in blocks (src/http/request-log.ts, log-blocks.ts). An operator's
 * log reader must see the same fields, in the same order, from every path, and nothing buffered
 * may be lost when the server stops.
 */
describe('the request log line on stdout', { timeout: 180_000 }, () => {
  it('has the same fields for a fast-path read and a full-path read, all written by the time the server has stopped', async () => {
    const port = 20000 + Math.floor(Math.random() * 12000);
    const env = { ...process.env, ...testEnv({ PORT: String(port), LOG_LEVEL: 'info' }) };
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      env: Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined)),
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const exited = new Promise((resolve) => child.once('exit', resolve));
    const url = `http://127.0.0.1:${port}`;
    let path = '';
    try {
      for (let i = 0; i < 1200 && !(await fetch(`${url}/healthcheck`).then((r) => r.ok, () => false)); i++) await new Promise((r) => setTimeout(r, 100));
      const client = superAdminClient(url);
      const created = await client.post('/Patient', patientBody());
      expect(created.status).toBe(201);
      const headers = await client.authHeaders();
      path = `/fhir/R4/Patient/${created.body.id}`;
      expect((await fetch(`${url}${path}`, { headers: { ...headers, 'X-Request-Id': 'fast-read' } })).status).toBe(200);
      expect((await fetch(`${url}${path}?_pretty=false`, { headers: { ...headers, 'X-Request-Id': 'full-read' } })).status).toBe(200);
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    const lines = stdout.split('\n').filter((line) => line.includes('"msg":"request"')).map((line) => JSON.parse(line) as Record<string, unknown>);
    const fast = lines.find((line) => line.reqId === 'fast-read');
    const full = lines.find((line) => line.reqId === 'full-read');
    const fields = ['level', 'time', 'pid', 'hostname', 'reqId', 'method', 'path', 'status', 'ms', 'msg'];
    expect(Object.keys(fast ?? {})).toEqual(fields);
    expect(Object.keys(full ?? {})).toEqual(fields);
    expect(fast).toMatchObject({ level: 30, method: 'GET', path, status: 200, msg: 'request' });
    expect(full).toMatchObject({ level: 30, pid: fast?.pid, hostname: fast?.hostname, method: 'GET', path, status: 200, msg: 'request' });
    expect(typeof fast?.ms).toBe('number');
  });
});
