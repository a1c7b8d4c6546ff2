import { graphiqlPage } from '../graphql/graphiql.js';
import { requestHeader } from '../graphql/http-body.js';
import { matchesIfNoneMatch } from '../router/handlers/resources.js';
import type { HonoContext } from './route.js';

/** What yoga renders GraphiQL for: a GET from a browser (Accept naming text/html). */
export function isGraphiQLVisit(c: HonoContext): boolean {
  return c.req.method === 'GET' && (requestHeader(c, 'accept') ?? '').includes('text/html');
}

/**
 * The GraphiQL page, answered here rather than by yoga so that its compressed form is made once:
 * a browser that has the page revalidates it (`no-cache`) and gets 304 by its entity tag, and one
 * that accepts gzip gets the bytes compressed at the first visit.
 */
export async function graphiqlAnswer(c: HonoContext): Promise<Response> {
  const page = graphiqlPage(c.req.path);
  const headers: Record<string, string> = { etag: page.etag, 'cache-control': 'no-cache', vary: 'Accept-Encoding' };
  if (matchesIfNoneMatch(requestHeader(c, 'if-none-match'), page.etag)) return new Response(null, { status: 304, headers });
  headers['content-type'] = 'text/html; charset=utf-8';
  if (!/\bgzip\b/.test(requestHeader(c, 'accept-encoding') ?? '')) return new Response(page.html, { status: 200, headers });
  const bytes = await page.gzipped();
  headers['content-encoding'] = 'gzip';
  headers['content-length'] = String(bytes.byteLength);
  return new Response(bytes, { status: 200, headers });
}
