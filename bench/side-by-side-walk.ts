import type { Side } from './side-by-side-data.js';

export interface Walk {
  pages: number;
  meanMs: number;
  p50Ms: number;
  maxMs: number;
  /** The mean of each walk's first two pages (read live by any server), and of the pages after them. */
  firstTwoMeanMs: number;
  restMeanMs: number;
  failed: number;
}

/**
 * Reads every Patient of the side's project a page of 100 at a time, from `Patient?_count=100`
 * through each answer's `next` link (whatever paging the server chose: offsets or a cursor), one
 * request at a time, `rounds` times over, and times each page: 30 pages of one walk leave the
 * mean at the mercy of one slow page.
 */
export async function walkPages(side: Side, rounds = 1): Promise<Walk> {
  const times: number[] = [];
  const firstTwo: number[] = [];
  let failed = 0;
  for (let walk = 0; walk < rounds && failed === 0; walk++) {
    const from = times.length;
    failed += await walkOnce(side, times);
    firstTwo.push(...times.slice(from, from + 2));
  }
  const sorted = [...times].sort((x, y) => x - y);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  const sum = (values: number[]) => values.reduce((total, t) => total + t, 0);
  return {
    pages: times.length,
    meanMs: round(sum(times) / times.length),
    firstTwoMeanMs: round(sum(firstTwo) / firstTwo.length),
    restMeanMs: round((sum(times) - sum(firstTwo)) / (times.length - firstTwo.length)),
    p50Ms: round(sorted[Math.floor(sorted.length / 2)]),
    maxMs: round(sorted[sorted.length - 1]),
    failed,
  };
}

/** One walk from the first page to the last, its page times pushed onto `times`; 1 when a page failed. */
async function walkOnce(side: Side, times: number[]): Promise<number> {
  let url: string | undefined = `${side.fhir}/Patient?_count=100`;
  let failed = 0;
  while (url) {
    const started = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${side.token}` } });
    const body = (await res.json()) as { link?: { relation: string; url: string }[] };
    times.push(performance.now() - started);
    if (res.status !== 200) {
      failed++;
      break;
    }
    url = body.link?.find((link) => link.relation === 'next')?.url;
  }
  return failed;
}
