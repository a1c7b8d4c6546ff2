import { renderGraphiQL } from '@graphql-yoga/render-graphiql';
import type { GraphiQLOptions } from 'graphql-yoga';

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

/** Pages kept: the system endpoints' few; instance-level endpoints (one per resource) take turns. */
const KEPT_PAGES = 4;

/**
 * The page is about 9 MB of text built from constant parts: it is rendered once per endpoint
 * instead of on every visit, keeping the last few (the instance-level paths are unbounded).
 */
export function offlineGraphiQLRenderer(): (options: GraphiQLOptions) => string {
  const pages = new Map<string, string>();
  return (options) => {
    const key = JSON.stringify(options);
    let page = pages.get(key);
    if (page === undefined) {
      page = renderGraphiQL(options);
      if (pages.size >= KEPT_PAGES) pages.delete(pages.keys().next().value as string);
      pages.set(key, page);
    }
    return page;
  };
}
