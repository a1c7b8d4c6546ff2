import type { Side } from './side-by-side-data.js';

export interface Walk {
  pages: number;
  meanMs: number;
  p50Ms: number;
  maxMs: number;
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
  let failed = 0;
  for (let walk = 0; walk < rounds && failed === 0; walk++) failed += await walkOnce(side, times);
  const sorted = [...times].sort((x, y) => x - y);
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return {
    pages: times.length,
    meanMs: round(times.reduce((sum, t) => sum + t, 0) / times.length),
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
