import { getConnInfo } from '@hono/node-server/conninfo';
import type { HonoContext } from './route.js';

/** The caller's address as the connection shows it (no proxy header is trusted), or `unknown`. */
export function clientAddress(c: HonoContext): string {
  try {
    return getConnInfo(c).remote.address ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
