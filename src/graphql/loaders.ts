import type { RequestContext } from '../context.js';

/** Per-request batching loaders (DataLoader), so nested reference loads cost a constant number of queries. */
export interface Loaders {}

export function createLoaders(_ctx: RequestContext): Loaders {
  return {};
}
