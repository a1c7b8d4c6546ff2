import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Side } from './side-by-side-data.js';

/**
 * What a page of the walk costs the client alone: a server that does nothing but send one stored
 * page (the side's first page of `Patient?_count=100`, gzip-compressed at level 3 when asked for,
 * as Flint does) in a process of its own, fetched and parsed as the walk fetches and parses its
 * pages. Each server's time a page above it is its own share: on one machine the client's fetch,
 * gunzip and JSON.parse take a couple of milliseconds a page whichever server answers.
 */
const STATIC_SERVER = `
const http = require('node:http');
const { readFileSync } = require('node:fs');
const { gzipSync } = require('node:zlib');
const body = readFileSync(process.argv[1]);
const gzipped = gzipSync(body, { level: 3 });
const server = http.createServer((req, res) => {
  const gzip = /\\bgzip\\b/.test(req.headers['accept-encoding'] || '');
  const sent = gzip ? gzipped : body;
  res.writeHead(200, { 'Content-Type': 'application/fhir+json; charset=utf-8', 'Content-Length': sent.length, Vary: 'Accept-Encoding', ...(gzip ? { 'Content-Encoding': 'gzip' } : {}) });
  res.end(sent);
});
server.listen(0, '127.0.0.1', () => process.stdout.write(String(server.address().port) + '\\n'));
`;

/** The mean time in ms a page of `side`'s first page took from a static server, over `pages` fetches after as many unmeasured. */
export async function clientFloorMs(side: Side, pages: number): Promise<number> {
  const page = await fetch(`${side.fhir}/Patient?_count=100`, { headers: { authorization: `Bearer ${side.token}` } });
  const dir = mkdtempSync(join(tmpdir(), 'flint-floor-'));
  const file = join(dir, 'page.json');
  writeFileSync(file, Buffer.from(await page.arrayBuffer()));
  const child = spawn(process.execPath, ['-e', STATIC_SERVER, file], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise<string>((resolve, reject) => {
      child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
      child.once('exit', (code) => reject(new Error(`the static server ended (${code})`)));
    });
    const url = `http://127.0.0.1:${port}/Patient?_count=100`;
    const fetchPage = async () => (await fetch(url)).json();
    for (let i = 0; i < pages; i++) await fetchPage();
    const started = performance.now();
    for (let i = 0; i < pages; i++) await fetchPage();
    return (performance.now() - started) / pages;
  } finally {
    child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}
