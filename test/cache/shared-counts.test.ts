import { describe, expect, it, vi } from 'vitest';
import { SearchCache } from '../../src/cache/search-cache.js';
import { clientClosed } from '../../src/db/cancellation.js';

/**
 * Exact counts asked for while the same count is being taken (SearchCache.countOnce): one
 * statement for all of them, unless a write they depend on was heard of since it was sent.
 */
const dependency = { projectIds: ['p1'], types: ['Observation'] };
const STATEMENT = 'SELECT count(*) FROM token_index WHERE ..\u0000["8867-4"]';

/** A count the test settles by hand, and how many times it was taken. */
function manualCount() {
  const settles: { resolve(n: number): void; reject(error: unknown): void }[] = [];
  const take = () => new Promise<number>((resolve, reject) => settles.push({ resolve, reject }));
  return { take, settles };
}

describe('exact counts taken once for concurrent requests', () => {
  it('a request asking for a count being taken waits for it instead of taking its own', async () => {
    const cache = new SearchCache();
    const { take, settles } = manualCount();
    const first = cache.countOnce(STATEMENT, dependency, take);
    const second = cache.countOnce(STATEMENT, dependency, take);
    expect(settles).toHaveLength(1);
    settles[0].resolve(42);
    expect(await Promise.all([first, second])).toEqual([42, 42]);
  });

  it('the count taken is kept for later requests', async () => {
    const cache = new SearchCache();
    await cache.countOnce(STATEMENT, dependency, async () => 7);
    expect(cache.get(STATEMENT)).toBe(7);
  });

  it('a request after a write of the counted type takes its own count, not the one sent before the write', async () => {
    const cache = new SearchCache();
    const { take, settles } = manualCount();
    const before = cache.countOnce(STATEMENT, dependency, take);
    cache.written('p1', 'Observation');
    const after = cache.countOnce(STATEMENT, dependency, take);
    expect(settles).toHaveLength(2);
    settles[0].resolve(1);
    settles[1].resolve(2);
    expect(await Promise.all([before, after])).toEqual([1, 2]);
  });

  it('a write of another project does not keep a request from waiting for the count being taken', async () => {
    const cache = new SearchCache();
    const { take, settles } = manualCount();
    const first = cache.countOnce(STATEMENT, dependency, take);
    cache.written('p2', 'Observation');
    const second = cache.countOnce(STATEMENT, dependency, take);
    expect(settles).toHaveLength(1);
    settles[0].resolve(5);
    expect(await second).toBe(5);
    expect(await first).toBe(5);
  });

  it('a request waiting for a count whose client went away takes its own', async () => {
    const cache = new SearchCache();
    const { take, settles } = manualCount();
    const gone = cache.countOnce(STATEMENT, dependency, take);
    const waiting = cache.countOnce(STATEMENT, dependency, take);
    settles[0].reject(clientClosed());
    await expect(gone).rejects.toMatchObject({ status: 499 });
    await vi.waitFor(() => expect(settles).toHaveLength(2));
    settles[1].resolve(9);
    expect(await waiting).toBe(9);
  });

  it('a request waiting for a count that failed otherwise gets the same failure', async () => {
    const cache = new SearchCache();
    const { take, settles } = manualCount();
    const first = cache.countOnce(STATEMENT, dependency, take);
    const second = cache.countOnce(STATEMENT, dependency, take);
    settles[0].reject(new Error('canceling statement due to statement timeout'));
    await expect(first).rejects.toThrow('statement timeout');
    await expect(second).rejects.toThrow('statement timeout');
    expect(settles).toHaveLength(1);
  });
});
