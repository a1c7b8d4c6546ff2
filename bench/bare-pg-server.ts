/**
 * The "bare pg" baseline of the read scenario: a minimal Node `http` server that answers
 * GET /fhir/R4/Patient/<id> with the resource's stored JSON, read by a prepared `pg` statement from
 * Flint's own resource table (same database, same rows, a pool of DATABASE_POOL_SIZE connections,
 * as Flint's reads have). No authentication, no routing beyond the path, no logging or metrics:
 * what a read by primary key costs with nothing around it. Its answer has what a FHIR read's must
 * (http.html 3.1.0.2: the version's ETag and Last-Modified) beside the content type and length,
 * so both servers do the same work for their answers' headers.
 *
 * Run as a child process by bench/bare-pg.ts (env PORT, DATABASE_URL, DATABASE_POOL_SIZE).
 */
import { createServer } from 'node:http';
import pg from 'pg';

const PREFIX = '/fhir/R4/Patient/';
const READ = 'SELECT "versionId"::text AS "versionId", "lastUpdated", content::text AS content FROM resource WHERE "resourceType" = $1 AND id = $2 AND NOT deleted';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DATABASE_POOL_SIZE ?? 10) });

const server = createServer((req, res) => {
  const url = req.url ?? '';
  if (req.method !== 'GET' || !url.startsWith(PREFIX)) {
    res.writeHead(url === '/healthcheck' ? 200 : 404).end();
    return;
  }
  pool.query<{ versionId: string; lastUpdated: Date; content: string }>({ name: 'bare_read', text: READ, values: ['Patient', url.slice(PREFIX.length)] }).then(
    ({ rows }) => {
      if (rows.length === 0) {
        res.writeHead(404).end();
        return;
      }
      const [{ versionId, lastUpdated, content }] = rows;
      res
        .writeHead(200, {
          'content-type': 'application/fhir+json; charset=utf-8',
          etag: `W/"${versionId}"`,
          'last-modified': lastUpdated.toUTCString(),
          'content-length': Buffer.byteLength(content),
        })
        .end(content);
    },
    () => res.writeHead(500).end(),
  );
});

server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => void pool.end().then(() => process.exit(0))));
