import type { IncomingMessage } from 'node:http';
import type { SearchCache } from '../cache/search-cache.js';
import type { Identity } from '../identity/identity.js';
import type { WalkPage } from '../router/types.js';
import type { EncodedAnswer } from './node-answers.js';

/**
 * Pages of a walk by cursor read ahead (docs/search.md, "Walks read ahead"). An app reading
 * through a type follows each page's `next` link as soon as it has parsed the page; while it
 * parses, the server would be idle. Once a client has followed one cursor link, the page after the
 * one it gets is read and encoded then, under the same token, headers and access, and kept for it.
 * A caller that walked a search so is remembered: when it asks for that search's first page again,
 * the second is read ahead too (a first page alone starts nothing: most apps show it and stop).
 * HAPI FHIR reads result sets ahead in the same spirit (its search pre-fetch thresholds).
 *
 * A returning walker's first page, answered live, is kept as it was sent: a caller that walks a
 * search again and again (a sync every few seconds, a list refreshed) gets it without a read. HAPI
 * FHIR reuses the result sets of identical searches for a minute; here only while nothing changed.
 *
 * A page kept is answered only while no write it depends on has been heard of since its
 * statements were sent (SearchCache.unchangedSince): then it is what the request would read now,
 * within the few milliseconds other servers' write notices take, as kept exact counts are. It is
 * answered to a request with the same token, path, query and content headers, within KEPT_MS of
 * its read: a page read ahead once, a first page as often as it is asked for. A request that comes
 * while its page is being read waits for it rather than reading it again.
 */

/** How long a page read ahead waits for its request: walking clients ask within milliseconds. */
const KEPT_MS = 10_000;
/**
 * How long a search a caller walked by cursor stays known: its next first page is read ahead from
 * (a sync that walks a type every few minutes, a report run again); tokens last an hour by default.
 */
const WALKER_MS = 60 * 60_000;
/** Searches remembered as walked, at most (one key each, a few hundred bytes). */
const MAX_WALKERS = 4096;
/** Pages kept at most, and their bytes (each is one client's next page). */
const MAX_PAGES = 256;
const MAX_BYTES = 32 * 1024 * 1024;
/** The request headers a search answer depends on, beside the token: each is part of the key. */
const KEYED_HEADERS = ['accept', 'accept-encoding', 'prefer'] as const;
/** Requests with these headers are answered as they ask, never from a page read ahead. */
const UNKEPT_HEADERS = ['if-none-match', 'if-modified-since', 'if-match'];
const NO_CACHE = /\bno-(?:cache|store)\b/i;

/** What answerDirectly asks of read-ahead for a search request that may be answered from it. */
export interface AnswerAhead {
  /** The page read ahead for this request by `identity`, when one is kept and still current (a first page never is). */
  kept(identity: Identity): Promise<PageAhead | undefined> | undefined;
  /** After the answer, whose `walk` is given: reads its next page ahead for the same caller. */
  after(walk: WalkPage, identity: Identity, requestId: string): void;
  /** Set when the answer, read live, is to be kept for its caller's next request (a returning walker's first page). */
  readonly keep?: (answered: AnsweredPage) => void;
}

/** A page as it was answered: what is kept of it beside when it was read. */
export type AnsweredPage = Omit<PageAhead, 'at'>;

/** A page read ahead, encoded as its request asks for it. */
export interface PageAhead {
  readonly status: number;
  readonly encoded: EncodedAnswer;
  /** Its own `walk`: what it depends on and the link after it. */
  readonly walk: WalkPage;
  /** SearchCache.now() before its statements were sent. */
  readonly at: number;
  /**
   * Who it was read for: the identity the token stood for then. A changed AccessPolicy or
   * membership gives the token a new identity (the identity cache drops the old one), whatever
   * types the search depends on.
   */
  readonly identity: Identity;
}

interface Kept {
  readonly page: Promise<PageAhead | undefined>;
  readonly expires: number;
  bytes: number;
  /** Answered as often as it is asked for (a first page), not once (a page read ahead). */
  readonly again: boolean;
}

export class ReadAhead {
  private readonly pages = new Map<string, Kept>();
  private bytes = 0;
  /** Searches (keyOf a page's `next` link without its cursor) walked by cursor, and until when they count as walked. */
  private readonly walkers = new Map<string, number>();
  /** Requests answered from a page read ahead, and requests of a walk that were read anew (metrics). */
  hits = 0;
  misses = 0;

  constructor(private readonly searchCache: SearchCache) {}

  /**
   * The key of a search request's answer (`pathAndQuery`: the type's path and its query as
   * URLSearchParams writes it), or undefined when it must not be answered from a page read ahead.
   */
  keyOf(pathAndQuery: string, headers: IncomingMessage['headers']): string | undefined {
    if (UNKEPT_HEADERS.some((name) => headers[name] !== undefined)) return undefined;
    const cacheControl = headers['cache-control'];
    if (cacheControl !== undefined && NO_CACHE.test(cacheControl)) return undefined;
    let key = `${headers.authorization ?? ''}\u0000${pathAndQuery}`;
    for (const name of KEYED_HEADERS) key += `\u0000${headers[name] ?? ''}`;
    return key;
  }

  /** The page read ahead for `key`, when one is kept (or being read) and still what a search by `identity` would read now. */
  async take(key: string, identity: Identity): Promise<PageAhead | undefined> {
    const page = await this.current(key, identity);
    if (page) this.hits++;
    else this.misses++;
    return page;
  }

  private async current(key: string, identity: Identity): Promise<PageAhead | undefined> {
    const kept = this.pages.get(key);
    if (!kept) return undefined;
    if (!kept.again) this.forget(key, kept);
    const page = await kept.page;
    const current = page !== undefined && page.identity === identity && Date.now() <= kept.expires && this.searchCache.unchangedSince(page.walk.dependency, page.at);
    if (!current && kept.again) this.forget(key, kept);
    return current ? page : undefined;
  }

  /** Reads the page of `key` ahead with `read` (given SearchCache.now() first), unless it is kept or being read. */
  readAhead(key: string, read: (at: number) => Promise<PageAhead | undefined>): void {
    if (this.pages.has(key)) return;
    this.hold(key, read(this.searchCache.now()).catch(() => undefined), false);
  }

  /**
   * Starts keeping the answer of `key` that is about to be read live: the function returned keeps
   * it once answered, as read now (before its statements are sent), for requests that ask again.
   */
  keepAnswer(key: string): (answered: AnsweredPage) => void {
    const at = this.searchCache.now();
    return (answered) => {
      const kept = this.pages.get(key);
      if (kept) this.forget(key, kept);
      this.hold(key, Promise.resolve({ ...answered, at }), true);
    };
  }

  private hold(key: string, page: Promise<PageAhead | undefined>, again: boolean): void {
    const kept: Kept = { page, expires: Date.now() + KEPT_MS, bytes: 0, again };
    this.pages.set(key, kept);
    void kept.page.then((read) => {
      if (this.pages.get(key) !== kept) return;
      if (!read) return this.forget(key, kept);
      kept.bytes = read.encoded.body.byteLength;
      this.bytes += kept.bytes;
      this.evict();
    });
    this.evict();
  }

  /** Remembers that the caller of `walkerKey` (keyOf a search without its cursor) walks it by cursor. */
  walked(walkerKey: string): void {
    this.walkers.delete(walkerKey);
    this.walkers.set(walkerKey, Date.now() + WALKER_MS);
    if (this.walkers.size > MAX_WALKERS) this.walkers.delete(this.walkers.keys().next().value!);
  }

  /** Whether the caller of `walkerKey` walked that search by cursor within WALKER_MS. */
  walks(walkerKey: string): boolean {
    const until = this.walkers.get(walkerKey);
    if (until === undefined) return false;
    if (until >= Date.now()) return true;
    this.walkers.delete(walkerKey);
    return false;
  }

  private evict(): void {
    const now = Date.now();
    for (const [key, kept] of this.pages) {
      const over = this.pages.size > MAX_PAGES || this.bytes > MAX_BYTES;
      if (!over && kept.expires > now) break;
      this.forget(key, kept);
    }
  }

  private forget(key: string, kept: Kept): void {
    if (this.pages.get(key) !== kept) return;
    this.pages.delete(key);
    this.bytes -= kept.bytes;
  }
}
