import { randomUUID } from 'node:crypto';

/**
 * A new id of a resource or of a version: a UUID whose first 48 bits are the time in
 * milliseconds (version 7 of RFC 9562), the other 74 random (those of a random UUID). Ids made one
 * after another sort in the order they were made, so the btrees keyed by them (resource, history,
 * and every index table's primary key) take new entries on their last pages instead of on pages
 * anywhere: after each checkpoint PostgreSQL writes a page's full image with its first change, and
 * with random ids a create touched a page nobody had changed since in most of those btrees.
 */
export function newId(): string {
  const random = randomUUID();
  const time = Date.now().toString(16).padStart(12, '0');
  // A random UUID's version digit (its 15th character, 4) becomes 7; its variant and random bits stay.
  return `${time.slice(0, 8)}-${time.slice(8)}-7${random.slice(15)}`;
}
