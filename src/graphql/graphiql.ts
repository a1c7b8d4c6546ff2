import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import type { GraphiQLOptions } from 'graphql-yoga';

const gzipAsync = promisify(gzip);

/**
 * GraphiQL with its scripts, styles and editor workers inside the page (yoga's render-graphiql
 * package), so it works in a network without internet: yoga's default page loads them from a CDN
 * and stays a blank "Loading..." page there.
 */
export function graphiqlOptions(endpoint: string): GraphiQLOptions {
  return {
    title: 'Flint GraphiQL',
    endpoint,
    // Every query needs a bearer token: the header editor opens with the header to fill in.
    headers: JSON.stringify({ Authorization: 'Bearer <access token>' }, null, 2),
    // yoga's GraphiQL keeps the headers in the browser's local storage by default: a token left
    // there outlives the visit, on what may be a shared workstation.
    shouldPersistHeaders: false,
  };
}

/** The GraphiQL page of one endpoint, with its entity tag and, once asked for, its gzip form. */
export interface GraphiQLPage {
  readonly html: string;
  readonly etag: string;
  gzipped(): Promise<Uint8Array<ArrayBuffer>>;
}

/** Pages kept: the system endpoints' few; instance-level endpoints (one per resource) take turns. */
const KEPT_PAGES = 4;
const pages = new Map<string, GraphiQLPage>();

/**
 * The page is about 9 MB of text built from constant parts: it is rendered, tagged and compressed
 * once per endpoint instead of on every visit (compressing it takes a noticeable share of a core),
 * keeping the last few (the instance-level paths are unbounded).
 */
export function graphiqlPage(endpoint: string): GraphiQLPage {
  let page = pages.get(endpoint);
  if (page === undefined) {
    page = newPage(renderGraphiQL(graphiqlOptions(endpoint)));
    if (pages.size >= KEPT_PAGES) pages.delete(pages.keys().next().value as string);
    pages.set(endpoint, page);
  }
  return page;
}

function newPage(html: string): GraphiQLPage {
  let compressed: Promise<Uint8Array<ArrayBuffer>> | undefined;
  return {
    html,
    etag: `"${createHash('sha256').update(html).digest('base64url').slice(0, 27)}"`,
    // Copied once into a plain ArrayBuffer, what a fetch Response takes as its body.
    gzipped: () => (compressed ??= gzipAsync(html).then((bytes) => new Uint8Array(bytes))),
  };
}

/** yoga's renderer for the pages it still renders itself (it is handed the options above). */
export function offlineGraphiQLRenderer(): (options: GraphiQLOptions) => string {
  return (options) => graphiqlPage(options.endpoint ?? '/graphql').html;
}
